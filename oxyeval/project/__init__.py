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
    "load_agent": "agents",
    "check_variables": "varschema",
    "schema_problems": "varschema",
    "variable_error": "varschema",
    "database_problems": "databases",
    "database_use_problem": "databases",
    "JudgeSettings": "config",
    "Project": "config",
    "load_project": "config",
    "JudgeSpec": "tests",
    "TestSpec": "tests",
    "DEFAULT_MIN_JUDGED": "tests",
    "parse_tests": "tests",
    "check_judge_prompt": "tests",
    "unseen_submissions": "tests",
    "file_kind": "files",
    "find_config": "files",
    "project_files": "files",
    "inside_project": "files",
    "outside_project": "files",
    "Document": "document",
    "load_yaml": "document",
    "parse_variables": "variables",
    "read_text": "document",
    "KeyPath": "document",
    "format_key_path": "document",
    "path_problem": "document",
    "BRANCH_PROVIDERS": "branches",
    "DEFAULT_MAX_TOKENS": "branches",
    "DEFAULT_TEMPERATURE": "branches",
    "DEFAULT_TOP_P": "branches",
    "MAX_BRANCHES": "branches",
    "BranchDef": "branches",
    "branch_problems": "branches",
    "parse_branches": "branches",
    "CaseDef": "prompts",
    "PromptDef": "prompts",
    "load_prompts": "prompts",
    "DEFAULT_THRESHOLD": "prompts",
    "collect_case_files": "prompts",
    "rewrite_expected_output": "rewrite",
    "TemplateRef": "templates",
    "JINJA_NAMES": "templates",
    "attribute_reads": "templates",
    "subscripts": "templates",
    "template_tree": "templates",
    "render": "templates",
    "evaluate": "templates",
    "referenced_names": "templates",
    "template_diagnostics": "templates",
    "validate_document": "schema",
    "SCHEMA_FILES": "schema",
    "did_you_mean": "schema",
    "schema_path": "schema",
    "MAX_CONCURRENCY": "limits",
    "MAX_DAYS": "limits",
    "MAX_LOOP_VALUES": "limits",
    "SCAFFOLD": "scaffold",
    "ScaffoldConflict": "scaffold",
    "next_steps": "scaffold",
    "write_scaffold": "scaffold",
}
__all__ = [
    "BRANCH_PROVIDERS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MIN_JUDGED",
    "DEFAULT_TEMPERATURE",
    "DEFAULT_THRESHOLD",
    "DEFAULT_TOP_P",
    "JINJA_NAMES",
    "MAX_BRANCHES",
    "MAX_CONCURRENCY",
    "MAX_DAYS",
    "MAX_LOOP_VALUES",
    "SCAFFOLD",
    "SCHEMA_FILES",
    "Agent",
    "BranchDef",
    "CaseDef",
    "ContextSpec",
    "Document",
    "JudgeSettings",
    "JudgeSpec",
    "KeyPath",
    "Project",
    "PromptDef",
    "ScaffoldConflict",
    "TemplateRef",
    "TestSpec",
    "attribute_reads",
    "branch_problems",
    "check_judge_prompt",
    "check_variables",
    "collect_case_files",
    "database_problems",
    "database_use_problem",
    "did_you_mean",
    "evaluate",
    "file_kind",
    "find_config",
    "format_key_path",
    "inside_project",
    "load_agent",
    "load_project",
    "load_prompts",
    "load_yaml",
    "next_steps",
    "outside_project",
    "parse_branches",
    "parse_tests",
    "parse_variables",
    "path_problem",
    "project_files",
    "read_text",
    "referenced_names",
    "render",
    "rewrite_expected_output",
    "schema_path",
    "schema_problems",
    "subscripts",
    "template_diagnostics",
    "template_tree",
    "unseen_submissions",
    "validate_document",
    "variable_error",
    "write_scaffold",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .agents import Agent, ContextSpec, load_agent
    from .branches import (
        BRANCH_PROVIDERS,
        DEFAULT_MAX_TOKENS,
        DEFAULT_TEMPERATURE,
        DEFAULT_TOP_P,
        MAX_BRANCHES,
        BranchDef,
        branch_problems,
        parse_branches,
    )
    from .config import JudgeSettings, Project, load_project
    from .databases import database_problems, database_use_problem
    from .document import Document, KeyPath, format_key_path, load_yaml, path_problem, read_text
    from .files import file_kind, find_config, inside_project, outside_project, project_files
    from .limits import MAX_CONCURRENCY, MAX_DAYS, MAX_LOOP_VALUES
    from .prompts import (
        DEFAULT_THRESHOLD,
        CaseDef,
        PromptDef,
        collect_case_files,
        load_prompts,
    )
    from .rewrite import rewrite_expected_output
    from .scaffold import SCAFFOLD, ScaffoldConflict, next_steps, write_scaffold
    from .schema import SCHEMA_FILES, did_you_mean, schema_path, validate_document
    from .templates import (
        JINJA_NAMES,
        TemplateRef,
        attribute_reads,
        evaluate,
        referenced_names,
        render,
        subscripts,
        template_diagnostics,
        template_tree,
    )
    from .tests import (
        DEFAULT_MIN_JUDGED,
        JudgeSpec,
        TestSpec,
        check_judge_prompt,
        parse_tests,
        unseen_submissions,
    )
    from .variables import parse_variables
    from .varschema import check_variables, schema_problems, variable_error
