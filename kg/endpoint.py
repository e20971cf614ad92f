"""The configured model endpoint's key (KG_LLM_MODEL, KG_LLM_BASE_URL, KG_LLM_API_KEY_ENV) in -> what to hand litellm as
`api_key` out: the variable KG_LLM_API_KEY_ENV names, a placeholder for a self-hosted OpenAI-compatible server (which
wants none, while the OpenAI client refuses to start without one), or nothing (the provider reads its own variable).
Every caller of the model (the answer loop, pack routing) asks here, so no caller reaches an endpoint without it."""

from __future__ import annotations

import os

__all__ = ["NO_KEY_NEEDED", "endpoint_key"]

NO_KEY_NEEDED = "not-needed"


def endpoint_key(model: str, base_url: str | None, api_key_env: str | None) -> tuple[str | None, str | None]:
    """(the `api_key` to pass, or None; what is wrong, or None): a KG_LLM_API_KEY_ENV that names an unset variable is
    wrong (said before any call: a provider reached without its key answers with an opaque error)."""
    if api_key_env:
        key = os.environ.get(api_key_env)
        return (key, None) if key else (None, f"the key variable {api_key_env} (KG_LLM_API_KEY_ENV) is not set")
    if base_url and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        return NO_KEY_NEEDED, None
    return None, None
