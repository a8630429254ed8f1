"""Which environment variables a provider model needs, and which of them are
missing, so a run can refuse to start without its key instead of failing task after
task (and `skillopt models` can say what to set).

Invariants: a variable's value is never read out, only whether it holds something
(an empty variable is not set: no key would be sent); a model configured with its
own `api_key_env` needs that variable and no other; a model configured with an
`api_base` (a local or OpenAI-compatible server) needs none, since it is sent a
placeholder key. `PROVIDERS` mirrors what litellm's `validate_environment` asks for
(a test holds the two together), which is also what the OpenAI and Anthropic SDKs
read; a name without a known prefix is looked up in litellm's price table (read as
data: no litellm import); providers it does not list are asked to litellm itself.
Providers whose credentials may come from elsewhere than a variable (AWS profiles,
Google application credentials, Azure AD) or that need none (ollama) are not
checked up front: a failed call says what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from skillopt.config.sections import ModelSettings


@dataclass(frozen=True)
class Provider:
    """A litellm provider and the variables that hold its key (any one will do)."""

    name: str  # litellm's provider name, the prefix of its model names
    keys: tuple[str, ...]


PROVIDERS: tuple[Provider, ...] = (
    Provider("openai", ("OPENAI_API_KEY",)),
    Provider("anthropic", ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")),
    Provider("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    Provider("mistral", ("MISTRAL_API_KEY",)),
    Provider("groq", ("GROQ_API_KEY",)),
    Provider("deepseek", ("DEEPSEEK_API_KEY",)),
    Provider("openrouter", ("OPENROUTER_API_KEY",)),
    Provider("together_ai", ("TOGETHERAI_API_KEY",)),
    Provider("xai", ("XAI_API_KEY",)),
    Provider("cohere", ("COHERE_API_KEY",)),
    Provider(
        "fireworks_ai",
        ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY", "FIREWORKSAI_API_KEY", "FIREWORKS_AI_TOKEN"),
    ),
    Provider("perplexity", ("PERPLEXITYAI_API_KEY",)),
    Provider("cerebras", ("CEREBRAS_API_KEY",)),
)
_BY_NAME = {p.name: p for p in PROVIDERS}

# credentials that may live outside any variable, or none at all: not checked before
# the run (a refused call is an auth failure then, and stops it)
NOT_CHECKED = {
    "azure": "AZURE_API_KEY and AZURE_API_BASE, or Azure AD",
    "azure_ai": "AZURE_AI_API_KEY",
    "bedrock": "AWS credentials (variables or a profile)",
    "sagemaker": "AWS credentials (variables or a profile)",
    "vertex_ai": "Google application default credentials",
    "vertex_ai_beta": "Google application default credentials",
    "ollama": "no key; a server at $OLLAMA_API_BASE or localhost:11434",
    "ollama_chat": "no key; a server at $OLLAMA_API_BASE or localhost:11434",
}


def is_set(var: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether `var` holds something (blank counts as not set)."""
    value = (os.environ if env is None else env).get(var)
    return bool(value and value.strip())


def provider_of(name: str) -> str | None:
    """The provider a model name goes to, from its prefix alone (no litellm import):
    None for a name without a known prefix."""
    prefix = name.split("/", 1)[0] if "/" in name else None
    if prefix in _BY_NAME or prefix in NOT_CHECKED:
        return prefix
    return None


def missing(
    name: str, settings: ModelSettings, env: Mapping[str, str] | None = None
) -> list[tuple[str, ...]]:
    """The credentials `name` (configured by `settings`) lacks to be called, each a
    tuple of variables any one of which would do; [] when nothing is missing or
    nothing can be told. `env` defaults to the process environment (a provider
    absent from `PROVIDERS` is asked to litellm, which reads the process
    environment)."""
    if settings.api_key_env:  # the key this model is configured to use, and no other
        return [] if is_set(settings.api_key_env, env) else [(settings.api_key_env,)]
    if settings.api_base or settings.params.get("api_base"):
        return []  # a configured server: the model sends it a placeholder key
    if settings.params.get("api_key"):
        return []
    # a prefix of ours, else the table's provider, else the prefix (litellm's to judge)
    provider = provider_of(name) or _table_provider(name) or name.partition("/")[0]
    if not provider or provider == name or provider in NOT_CHECKED:
        return []
    known = _BY_NAME.get(provider)
    if known is not None:
        return [] if any(is_set(k, env) for k in known.keys) else [known.keys]
    from skillopt.models.litellm_model import import_litellm

    try:
        found = import_litellm().validate_environment(model=name)
    except Exception:  # litellm cannot tell
        return []
    return [(var,) for var in found.get("missing_keys") or [] if not is_set(var, env)]


def _table_provider(name: str) -> str | None:
    """The provider litellm's price table files `name` under (`gpt-4o` goes to
    openai), None if it does not know the name."""
    from skillopt.models import prices

    return prices.provider(name)


def describe(group: tuple[str, ...]) -> str:
    """`OPENAI_API_KEY`, or `GEMINI_API_KEY (or GOOGLE_API_KEY)` for alternatives."""
    first, *others = group
    return first + (f" (or {', '.join(others)})" if others else "")
