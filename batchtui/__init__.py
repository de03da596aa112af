"""batchtui: a keyboard-only terminal tutorial on how LLM inference servers batch requests."""

__version__ = "0.1.0"
