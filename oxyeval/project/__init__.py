"""Stage 2, project files: read YAML with positions, check it, and return typed specs.

Everything here is static: loading a project never calls a model, opens a database
or reads an API key's value for use. Problems come back as diagnostics naming the
file, line and key (:class:`oxyeval.errors.Diagnostic`), all of a file's at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "Agent": "agents",
    "ContextSpec": "agents",
    "JudgeSettings": "config",
    "JudgeSpec": "tests",
    "Project": "config",
    "TestSpec": "tests",
    "file_kind": "files",
    "find_config": "files",
    "load_agent": "agents",
    "load_project": "config",
    "project_files": "files",
    "Document": "document",
    "load_yaml": "document",
    "read_text": "document",
    "CaseDef": "prompts",
    "PromptDef": "prompts",
    "load_prompts": "prompts",
    "TemplateRef": "templates",
    "render": "templates",
    "validate_document": "schema",
}
__all__ = [
    "Agent",
    "CaseDef",
    "ContextSpec",
    "Document",
    "JudgeSettings",
    "JudgeSpec",
    "Project",
    "PromptDef",
    "TemplateRef",
    "TestSpec",
    "file_kind",
    "find_config",
    "load_agent",
    "load_project",
    "load_prompts",
    "load_yaml",
    "project_files",
    "read_text",
    "render",
    "validate_document",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .agents import Agent, ContextSpec, load_agent
    from .config import JudgeSettings, Project, load_project
    from .document import Document, load_yaml, read_text
    from .files import file_kind, find_config, project_files
    from .prompts import CaseDef, PromptDef, load_prompts
    from .schema import validate_document
    from .templates import TemplateRef, render
    from .tests import JudgeSpec, TestSpec
