"""The providers, registered in one table: name -> class (design §7)."""

from __future__ import annotations

from app.llm.providers.base import PURPOSE_HEADER, Provider
from app.llm.providers.offline import OfflineProvider
from app.llm.providers.ollama import OllamaProvider
from app.llm.providers.openai import OpenAIProvider

PROVIDERS: dict[str, type[Provider]] = {
    "offline": OfflineProvider,
    "ollama": OllamaProvider,
    "openai": OpenAIProvider,
}

__all__ = ["PROVIDERS", "PURPOSE_HEADER", "Provider"]
