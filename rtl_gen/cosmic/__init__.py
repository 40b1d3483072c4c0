"""CoSMIC family: processing engine (and, later, the memory schedule unit)."""
