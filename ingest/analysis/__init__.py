"""Per-trace analysis, pure: a canonical trace in, its derived facts out."""
