"""The trainable artifact: SKILL.md parsing, rendering, hashing and linting."""

from skillopt.skill.document import Section, Skill

__all__ = ["Section", "Skill"]
