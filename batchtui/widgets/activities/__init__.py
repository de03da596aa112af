"""One widget per kind of activity; `ActivityPanel` (one level up) picks which."""
