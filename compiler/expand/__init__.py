"""Second lowering, second half: Workflow + planned group -> the exact objects the controller creates (pure)."""
