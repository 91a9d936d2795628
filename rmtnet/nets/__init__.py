"""Trainable torch models of rmtnet (filled in by issue 4)."""
