"""Inside the SQL worker: opening DuckDB in its sandbox, and wording its errors.

The limits go in at connect time, before DuckDB opens the database file: opening a
file can itself load an extension (an SQLite file asks for ``sqlite_scanner``, from
the network if it may), so autoloading and installing are off, and the extension
folder is a private empty one, before anything else happens. File access is then
locked to the dataset folder and the configuration locked, so no statement can lift
a limit.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["absent_file", "connect", "explain_error"]

_MISSING = re.compile(r'No files found that match the pattern "([^"]*)"')
_DENIED = re.compile(r'Cannot access (?:file|directory) "([^"]*)"')
_NO_TABLE = re.compile(r"Table with name ([^ ]*[./][^ ]*) does not exist")  # 'orders.cvs'

_SUGGESTION_FILES = 10_000  # a dataset with more files gets no "did you mean"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(setup: dict[str, Any]) -> Any:
    import duckdb

    private = Path(setup["private"])
    config = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_unsigned_extensions": False,
        "allow_persistent_secrets": False,
        "python_enable_replacements": False,  # no reading Python variables by name
        "extension_directory": str(private / "extensions"),
        "temp_directory": str(private / "spill"),
        "max_temp_directory_size": setup["max_temp"],
        "memory_limit": setup["memory_limit"],
        "threads": setup["threads"],
    }
    path = setup.get("path")
    if path:
        conn = duckdb.connect(path, read_only=not setup["writable"], config=config)
    else:
        conn = duckdb.connect(":memory:", config=config)
    try:
        dataset = setup.get("dataset")
        if dataset:
            folder = _quote(dataset)
            conn.execute(f"SET GLOBAL file_search_path = {folder}")
            conn.execute(f"SET GLOBAL home_directory = {folder}")  # '~/x' is in it
            conn.execute(f"SET GLOBAL allowed_directories = [{_quote(dataset + '/')}]")
        # enable_external_access last but one: after it only the dataset can be opened;
        # GLOBAL, or the settings would hold for this connection only, not its cursors.
        conn.execute("SET GLOBAL enable_external_access = false")
        conn.execute("SET GLOBAL lock_configuration = true")
    except BaseException:
        conn.close()
        raise
    return conn


def explain_error(exc: BaseException, setup: dict[str, Any]) -> str:
    """DuckDB's message (its first line: later lines quote the query or a file), with
    what to do about it where we can tell."""
    import duckdb

    from ._sqlsyntax import first_line

    first = first_line(exc)
    message = f"{type(exc).__name__}: {first}"
    dataset = setup.get("dataset")
    missing = _MISSING.search(first) or _DENIED.search(first) or _NO_TABLE.search(first)
    if dataset and missing:
        absent = absent_file(missing.group(1), dataset, setup.get("dataset_shown") or dataset)
        if absent:
            return absent
    if isinstance(exc, duckdb.OutOfMemoryException):
        message = (
            f"the query needs more memory than the database's memory_limit "
            f"({setup.get('memory_limit')}) allows: raise it in config.yml, or ask for less "
            f"({type(exc).__name__}: {first})"
        )
    elif isinstance(exc, duckdb.PermissionException):
        message += (
            "; SQL may open files only inside the database's dataset folder (by the "
            "name of a file there, as '~/...', or by an absolute path inside it)"
        )
    elif "Parameter not supported" in first or 'at or near "$' in first:
        message += (
            "; a template value is bound as a parameter, which cannot stand for a name "
            "here: print names with {{ name | sql_identifier }}"
        )
    return message


def absent_file(name: str, dataset: str, shown: str) -> str:
    """'no file X in data/ (did you mean Y?)' when ``name`` would be a dataset file (or a
    pattern of them) that does not exist; '' when it exists or lies outside the dataset."""
    import glob

    relative = name[2:] if name.startswith("~/") else name
    path = os.path.normpath(os.path.join(dataset, relative))
    if os.path.commonpath([path, dataset]) != dataset:
        return ""  # outside: the sandbox refuses it, in its own words
    folder = shown if shown.endswith("/") else shown + "/"
    wanted = os.path.relpath(path, dataset)
    if any(ch in relative for ch in "*?["):
        if glob.glob(wanted, root_dir=dataset, recursive=True):
            return ""
        return f"no file in {folder} matches {wanted}"
    if os.path.exists(path):
        return ""
    close = difflib.get_close_matches(wanted, _dataset_files(dataset), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"no file {wanted} in {folder}{hint}"


def _dataset_files(dataset: str) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(dataset):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), dataset))
            if len(out) >= _SUGGESTION_FILES:
                return []
    return out
