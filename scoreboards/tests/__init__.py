"""Plain pytest tests of the pure scoreboard helpers (no simulator)."""
