"""The tutorial's widgets: one per file, each with its styles in a `.tcss` beside it."""
