"""Prompts made through the API: no YAML file, their versions kept in the store alone.

A team driving tests from its own tools (the GraphQL API, a script) has prompts that live
in its product, not in this repository. Such a prompt is a row with ``source = "api"``
and the same version content a ``*.prompt.yml`` gives (model, template, system, params):
making it again with other content is its next version, as editing a file is. Runs build
a :class:`~oxyeval.project.prompts.PromptDef` from its latest version, so its cases run,
score and detect regressions through the one cases engine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, LoadError
from ...project.config import Project
from ...project.prompts import PromptDef
from ...project.templates import TemplateRef
from ...providers import GenerateParams
from ..prompt_sync import API_SOURCE

if TYPE_CHECKING:
    from ...store import Prompt, Store

__all__ = [
    "MAX_TEMPLATE_CHARS",
    "api_prompt_defs",
    "create_prompt",
    "prompt_def_from_content",
]

#: The ``source`` of a prompt made through the API (a YAML prompt's is its file).
MAX_TEMPLATE_CHARS = 100_000
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_PARAMS: dict[str, tuple[type, float, float]] = {
    "temperature": (float, 0.0, 2.0),
    "max_tokens": (int, 1, 10_000_000),
    "top_p": (float, 0.0, 1.0),
    "seed": (int, -(2**63), 2**63 - 1),
}
_MAX_STOPS = 16


def _check_params(params: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key == "stop":
            if not (
                isinstance(value, list)
                and len(value) <= _MAX_STOPS
                and all(isinstance(s, str) and 0 < len(s) <= 1000 for s in value)
            ):
                raise ConfigError(
                    f"params.stop must be a list of at most {_MAX_STOPS} non-empty strings"
                )
            out[key] = list(value)
            continue
        rule = _PARAMS.get(key)
        if rule is None:
            known = ", ".join([*_PARAMS, "stop"])
            raise ConfigError(f"params.{key} is not a prompt parameter; known: {known}")
        kind, low, high = rule
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and kind is int:
            ok = float(value).is_integer()
        if not ok or not math.isfinite(float(value)) or not low <= value <= high:
            what = "an integer" if kind is int else "a number"
            raise ConfigError(
                f"params.{key} must be {what} from {low:g} to {high:g}, got {value!r}"
            )
        out[key] = int(value) if kind is int else float(value)
    return out


def _template(source: str, key: str) -> TemplateRef:
    if len(source) > MAX_TEMPLATE_CHARS:
        raise ConfigError(f"{key} is {len(source):,} characters; at most {MAX_TEMPLATE_CHARS:,}")
    ref = TemplateRef(source)
    try:
        ref.compiled()
    except LoadError as exc:
        raise ConfigError(f"{key} is not a valid template: {exc.diagnostics[0].message}") from None
    return ref


def prompt_def_from_content(prompt_id: str, content: Mapping[str, Any]) -> PromptDef:
    """The prompt a stored version describes, built in code (no file)."""
    system = content.get("system")
    return PromptDef(
        id=prompt_id,
        kind="prompt",
        model=str(content["model"]),
        template=TemplateRef(str(content["template"])),
        system=TemplateRef(str(system)) if system else None,
        params=GenerateParams(**dict(content.get("params") or {})),
    )


def create_prompt(
    store: Store,
    project: Project,
    name: str,
    *,
    model: str,
    template: str,
    system: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> tuple[Prompt, int]:
    """Make (or give a new version of) a prompt without a file; returns it and the version
    its content has. Its id is its name. A prompt declared in a project file cannot be
    changed this way: its file is its truth, and the next sync would undo the change."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"prompt name {name!r} is not valid: 1-128 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    if model not in project.models:
        known = ", ".join(sorted(project.models)) or "none"
        raise ConfigError(f"model {model!r} is not in config.yml; its models: {known}")
    _template(template, "template")
    if system is not None:
        _template(system, "system")
    checked = _check_params(params or {})
    existing = store.prompts.get(name)
    if existing is not None and existing.source not in ("", API_SOURCE):
        raise ConfigError(
            f"prompt {name!r} is declared in {existing.source}; change it there (a version "
            "made here would be undone by the next run of that file)"
        )
    definition = PromptDef(
        id=name,
        kind="prompt",
        model=model,
        template=TemplateRef(template),
        system=TemplateRef(system) if system else None,
        params=GenerateParams(**checked),
    )
    prompt = store.prompts.upsert(name, name, API_SOURCE)
    version = store.prompts.ensure_version(name, definition.content(project))
    return prompt, version


def api_prompt_defs(store: Store, project: Project, exclude: Sequence[str] = ()) -> list[PromptDef]:
    """The API's prompts as the latest version of each describes them, for a run of the
    whole project (``exclude``: ids a file declares, which win)."""
    skip = set(exclude)
    out = []
    for prompt in store.prompts.list():
        if prompt.source != API_SOURCE or prompt.id in skip:
            continue
        version = store.prompts.latest_version(prompt.id)
        content = store.prompts.get_version(prompt.id, version) if version else None
        if content is None or content.get("model") not in project.models:
            continue  # its model left config.yml: a run of it would only error
        out.append(prompt_def_from_content(prompt.id, content))
    return out
