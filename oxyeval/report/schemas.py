"""The JSON Schemas of the output documents (:mod:`.documents`), shipped beside the
project files' in ``schemas/output/``: what ``oxy schema`` prints and what the tests
hold every command's ``--format json`` to.

The documents share definitions (a result, a decision...) through
``common.schema.json``, which every other schema ``$ref``s; :func:`output_validator`
resolves those references offline.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import TYPE_CHECKING, Any

from .documents import DOCUMENTS

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = [
    "OUTPUT_SCHEMAS",
    "load_output_schema",
    "output_schema_name",
    "output_schema_path",
    "output_validator",
]

#: Every output schema's name (its file's stem), ``common`` last: the definitions the
#: others refer to.
OUTPUT_SCHEMAS: tuple[str, ...] = (*DOCUMENTS.values(), "common")


def output_schema_name(name: str) -> str | None:
    """The schema a name means: a schema's own name (``run-detail``), a document's
    (``runDetail``), either with ``output/`` before it; None for neither."""
    name = name.removeprefix("output/")
    if name in OUTPUT_SCHEMAS:
        return name
    return DOCUMENTS.get(name)


def _file(name: str) -> Any:
    return resources.files("oxyeval") / "schemas" / "output" / f"{name}.schema.json"


def output_schema_path(name: str) -> str:
    """Filesystem path of a shipped output schema."""
    return str(_file(name))


@functools.cache
def load_output_schema(name: str) -> dict[str, Any]:
    return json.loads(_file(name).read_text("utf-8"))


@functools.cache
def output_validator(name: str) -> Validator:
    """A validator for the document ``name`` (a schema's name), its references to the
    shared definitions resolved from the shipped files."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema))
        for schema in (load_output_schema(n) for n in OUTPUT_SCHEMAS)
    )
    return Draft202012Validator(load_output_schema(name), registry=registry)
