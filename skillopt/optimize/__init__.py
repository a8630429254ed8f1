"""Optimizer strategies: the contract (`base`), reflection by an LLM (`reflect`, with
its prompts and reply format), worked examples (`exemplars`), merging and budgeting
edits (`merge`, `schedule`), the gate, memory, evidence and the dry-run plan."""
