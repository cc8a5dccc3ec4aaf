"""Layer 0: the one settings model, the one metrics module, the exception roots."""
