"""Second lowering, first half: which nodes a Workflow runs on and how they are grouped (pure)."""
