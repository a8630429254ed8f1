"""Leaf helpers every layer may use: safe text, secret scrubbing, numbers for people."""
