"""The model choice: the seven settings the UI may change at run time (`PUT /api/llm`).

At start the choice is what the settings say (`ModelChoice.of(settings)`); from then on the
gateway owns it (`Gateway.choice`, changed only by `Gateway.switch`), and the settings stay
the settings in force at start (`app[SETTINGS]`). Its fields are named as the settings they
stand for, and each value is checked by the settings table (`app.core.settings.checked`), so
a choice holds nothing the next start would refuse (the task model's two settings are also
checked together, as at start: `task_model_problem`). Auto-detection does not change the
choice: it picks the provider in use while the choice names none.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from app.core.settings import ProviderName, Settings, SettingsError, checked, task_model_problem


@dataclass(frozen=True, kw_only=True)  # no slots: see app.core.settings.Settings
class ModelChoice:
    """Which provider, server, model and key, whether the provider counts as remote, and
    the task model (its name and server; none: every call uses `llm_model`). The fields'
    types are the settings' (tests/llm/test_choice.py holds them equal)."""

    llm_provider: ProviderName | None
    llm_url: str | None
    llm_model: str | None
    llm_remote: bool
    llm_api_key: str | None = field(repr=False)
    llm_task_model: str | None = None
    llm_task_url: str | None = None

    @classmethod
    def of(cls, settings: Settings) -> ModelChoice:
        return cls(**{name: getattr(settings, name) for name in MODEL_CHOICE})

    def changed(self, **changes: Any) -> ModelChoice:
        """This choice with `changes` (by setting name), each checked by the settings table
        (`SettingsError` naming the setting); `ValueError` for a setting outside the choice."""
        other = sorted(set(changes) - set(MODEL_CHOICE))
        if other:
            raise ValueError(f"the model choice has no {', '.join(other)}")
        choice = replace(self, **{name: checked(name, value) for name, value in changes.items()})
        problem = task_model_problem(choice.llm_task_model, choice.llm_task_url)
        if problem is not None:
            raise SettingsError(f"{problem} (source: override)")
        return choice


MODEL_CHOICE: tuple[str, ...] = tuple(f.name for f in fields(ModelChoice))
