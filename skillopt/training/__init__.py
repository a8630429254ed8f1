"""Training: one run session (`session`), the step loop (`loop`), its checkpoint
(`state`) and the exact replay of a finished run (`replay`)."""
