"""The app's screens, one per file."""
