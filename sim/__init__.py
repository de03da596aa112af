"""batchtui's simulator core: an iteration-level model of one LLM serving engine.

Pure Python and numpy, deterministic for a seed, and free of any UI import.
"""
