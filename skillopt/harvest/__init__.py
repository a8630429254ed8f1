"""Candidate tasks harvested from the user's own Claude Code and Codex sessions: read
only from the paths the user names, redacted before anything is written or sent,
near-duplicates merged, written as a review file the user edits, and only the
entries they keep made into a suite.

The flow: `sessions` walks the named paths and streams each transcript through the
agent's reader (`claude`, `codex`) into `steps` and then exchanges; `candidates`
redacts and merges them; `rubric` asks a model for rubric drafts; `review` writes
the review file and reads it back into a suite.
"""
