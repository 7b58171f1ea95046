"""Pure judgement: observations and measurements -> the verdict model."""
