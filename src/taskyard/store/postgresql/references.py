"""PostgreSQL: the references between jobs, edges, task types and graphs, checked once
per statement instead of once per row.

PostgreSQL 15 checks a foreign key with a query per inserted row. A 100,000-job graph
with 300,000 edges made 800,000 of them: 5 of the 7.6 seconds its submit took. The
triggers below keep the same rules with one query per statement (a set-based join
over the statement's new or old rows, its *transition table*):

- ``jobs.type`` names a task type, ``jobs.graph_id`` a graph (or is NULL), and both
  ends of an edge (``dependencies.job_id``, ``requires_id``) name jobs. The rows
  referred to are locked ``FOR KEY SHARE``, as a foreign key check locks them: a
  concurrent delete of one waits for our commit, or we wait for its and then find
  the row gone and refuse.
- Deleting a job deletes its edges, both ways (the foreign keys' ``ON DELETE CASCADE``).
- Deleting a task type or a graph that jobs still name is refused (``NO ACTION``). The
  check runs after the rows are deleted and locked: in READ COMMITTED (every store
  transaction) it sees any job committed meanwhile.
- The columns that tie rows together never change: an update that would change one
  is refused.

A statement that makes these checks itself (one job, its task type locked ``FOR KEY
SHARE`` by the insert: see postgresql/jobs.py) says so with :data:`CHECKED_SETTING`, and the
insert trigger is not called: a PL/pgSQL call per submit is a fifth of its cost.

An attempt's job and worker (``attempts.job_id``, ``worker_id``; migration 0019) are
checked the same way, and a job deleted takes its attempts with it. The one statement
that inserts attempts, the dispatch (postgresql/cycle.py:DISPATCH), runs under the
cycle's lock and checks them itself: each attempt's job is the row the statement has
just updated, and its worker the one that row now names, which the foreign key
``jobs.worker_id`` checks and locks as the statement ends. Under that lock
(:data:`CYCLE_HELD`) the attempts insert trigger is not called: the two per-row
checks it replaces were 0.27-0.34 ms of a cycle placing 50 jobs over 100,000 pending
(3.13-3.20 -> 2.86-2.93 ms).

A refusal raises SQLSTATE 23503 (``foreign_key_violation``), as a foreign key would,
saying which row is missing or still in use. SQLite keeps ordinary foreign keys
(``schema.py`` creates them there only): its checks are cheap in-process lookups.
"""

from __future__ import annotations

# No % characters below: the statements also go through DB-API drivers that read
# them as parameter markers.
_REFER = """
CREATE FUNCTION taskyard_{name}() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE refused text;
BEGIN
  SELECT {probe} INTO refused;
  IF refused IS NOT NULL THEN
    RAISE foreign_key_violation USING MESSAGE = '{table}: ' || refused,
      TABLE = '{table}';
  END IF;
  RETURN NULL;
END
$body$
"""

# The first id (or name) the new rows refer to that has no row, after locking the ones
# that do.
_MISSING = """(SELECT {label} FROM (SELECT DISTINCT {column} AS key FROM {rows}
      WHERE {column} IS NOT NULL) n
    LEFT JOIN LATERAL (SELECT true AS found FROM {parent} p WHERE p.{parent_key} = n.key
      FOR KEY SHARE) l ON true
    WHERE l.found IS NULL LIMIT 1)"""

_JOBS_MISSING = f"""coalesce({_MISSING.format(
    label="'no task type ' || quote_literal(n.key)", column="type", rows="new_jobs",
    parent="task_types", parent_key="name")}, {_MISSING.format(
    label="'no graph ' || n.key", column="graph_id", rows="new_jobs",
    parent="graphs", parent_key="id")})"""

_EDGES_MISSING = _MISSING.format(
    label="'an edge names job ' || n.key || ', which does not exist'",
    column="id", rows="(SELECT job_id AS id FROM new_edges "
                      "UNION SELECT requires_id FROM new_edges) e",
    parent="jobs", parent_key="id")

_STILL_USED = """(SELECT {label} FROM {old} o
    WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.{column} = o.{key}) LIMIT 1)"""

_KEYS_FIXED = """
CREATE FUNCTION taskyard_keys_fixed() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  RAISE foreign_key_violation USING
    MESSAGE = TG_TABLE_NAME || ': the columns that tie rows together cannot change',
    TABLE = TG_TABLE_NAME;
END
$body$
"""

_JOBS_GONE = """
CREATE FUNCTION taskyard_jobs_gone() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  DELETE FROM dependencies WHERE job_id IN (SELECT id FROM old_jobs);
  DELETE FROM dependencies WHERE requires_id IN (SELECT id FROM old_jobs);
  RETURN NULL;
END
$body$
"""

_ATTEMPTS_MISSING = f"""coalesce({_MISSING.format(
    label="'no job ' || n.key", column="job_id", rows="new_attempts",
    parent="jobs", parent_key="id")}, {_MISSING.format(
    label="'no worker ' || n.key", column="worker_id", rows="new_attempts",
    parent="workers", parent_key="id")})"""

_WORKERS_STILL_NAMED = """(SELECT 'attempts still name worker ' || o.id FROM old_workers o
    WHERE EXISTS (SELECT 1 FROM attempts a WHERE a.worker_id = o.id) LIMIT 1)"""

_JOBS_AND_ATTEMPTS_GONE = _JOBS_GONE.replace(
    "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION").replace(
    "  RETURN NULL;", "  DELETE FROM attempts WHERE job_id IN (SELECT id FROM old_jobs);\n"
    "  RETURN NULL;")
"""The jobs delete trigger of 0019 on: a job's attempts go too (the foreign key's
``ON DELETE CASCADE`` it replaces)."""

CYCLE_HELD = "taskyard.cycle_held"
"""Set ``on`` (until its transaction ends) by the statement that takes the cycle's lock
(postgresql/cycle.py:LOCK_AHEAD)."""

CHECKED_SETTING = "taskyard.references_checked"
"""A setting a statement turns ``on`` (for its transaction: ``set_config(..., true)``)
when it has checked the references of the jobs it inserts itself. Only a statement
that is its whole transaction (autocommit) may set it: any later insert into jobs in
the same transaction would go unchecked."""

CHECKED_WHEN = f"current_setting('{CHECKED_SETTING}', true) IS DISTINCT FROM 'on'"
"""The jobs insert trigger's condition: the statement did not check them itself."""

# (trigger, table, when, transition table, function, condition or None)
_TRIGGERS = (
    ("jobs_refer", "jobs", "AFTER INSERT", "NEW TABLE AS new_jobs", "jobs_refer",
     CHECKED_WHEN),
    ("edges_refer", "dependencies", "AFTER INSERT", "NEW TABLE AS new_edges", "edges_refer",
     None),
    ("jobs_gone", "jobs", "AFTER DELETE", "OLD TABLE AS old_jobs", "jobs_gone", None),
    ("types_gone", "task_types", "AFTER DELETE", "OLD TABLE AS old_types", "types_gone",
     None),
    ("graphs_gone", "graphs", "AFTER DELETE", "OLD TABLE AS old_graphs", "graphs_gone",
     None),
)

# (trigger, table, key columns): refuse an update that changes one of them.
_FIXED = (
    ("jobs_keys_fixed", "jobs", ("id", "type", "graph_id")),
    ("edges_keys_fixed", "dependencies", ("job_id", "requires_id")),
    ("types_keys_fixed", "task_types", ("name",)),
    ("graphs_keys_fixed", "graphs", ("id",)),
)

FUNCTIONS = (*(row[4] for row in _TRIGGERS), "keys_fixed")


# 0019: the references of attempts (trigger rows as in _TRIGGERS and _FIXED).
_ATTEMPT_TRIGGERS = (
    ("attempts_refer", "attempts", "AFTER INSERT", "NEW TABLE AS new_attempts",
     "attempts_refer", f"current_setting('{CYCLE_HELD}', true) IS DISTINCT FROM 'on'"),
    ("workers_gone", "workers", "AFTER DELETE", "OLD TABLE AS old_workers", "workers_gone",
     None),
)
_ATTEMPT_FIXED = ("attempts_keys_fixed", "attempts", ("job_id", "worker_id"))


def attempt_statements() -> list[str]:
    """The DDL that checks the references of attempts (migration 0019; the checks of
    :func:`create_statements` must exist)."""
    trigger, table, keys = _ATTEMPT_FIXED
    return [
        _REFER.format(name="attempts_refer", table="attempts", probe=_ATTEMPTS_MISSING),
        _REFER.format(name="workers_gone", table="workers", probe=_WORKERS_STILL_NAMED),
        _JOBS_AND_ATTEMPTS_GONE,
        *(trigger_statement(row) for row in _ATTEMPT_TRIGGERS),
        _fixed_statement(trigger, table, keys),
    ]


def attempt_drop_statements() -> list[str]:
    """The triggers and functions of :func:`attempt_statements` gone (the tables stay)."""
    triggers = [(row[0], row[1]) for row in _ATTEMPT_TRIGGERS] + [_ATTEMPT_FIXED[:2]]
    return [
        *(f"DROP TRIGGER IF EXISTS taskyard_{trigger} ON {table}" for trigger, table in triggers),
        *(f"DROP FUNCTION IF EXISTS taskyard_{row[4]}()" for row in _ATTEMPT_TRIGGERS),
    ]


def jobs_gone_without_attempts() -> str:
    """Migration 0019 undone: the jobs delete trigger's function as 0004 made it (the
    foreign key's cascade deletes attempts again)."""
    return _JOBS_GONE.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")


def _fixed_statement(trigger: str, table: str, keys: tuple[str, ...]) -> str:
    """A row trigger that refuses an update changing one of ``keys``."""
    return (f"CREATE TRIGGER taskyard_{trigger} BEFORE UPDATE OF {', '.join(keys)} ON {table} "
            f"FOR EACH ROW WHEN ({' OR '.join(f'OLD.{k} IS DISTINCT FROM NEW.{k}' for k in keys)}) "
            "EXECUTE FUNCTION taskyard_keys_fixed()")


def create_statements(*, checked_when: bool = True) -> list[str]:
    """The DDL that installs the checks (the tables must exist); ``checked_when``: see
    :func:`trigger_statement`."""
    statements = [
        _REFER.format(name="jobs_refer", table="jobs", probe=_JOBS_MISSING),
        _REFER.format(name="edges_refer", table="dependencies", probe=_EDGES_MISSING),
        _JOBS_GONE,
        _REFER.format(name="types_gone", table="task_types", probe=_STILL_USED.format(
            label="'jobs still use task type ' || quote_literal(o.name)", old="old_types",
            column="type", key="name")),
        _REFER.format(name="graphs_gone", table="graphs", probe=_STILL_USED.format(
            label="'graph ' || o.id || ' still has jobs'", old="old_graphs",
            column="graph_id", key="id")),
        _KEYS_FIXED,
    ]
    statements += [trigger_statement(row, checked_when=checked_when) for row in _TRIGGERS]
    statements += [_fixed_statement(trigger, table, keys) for trigger, table, keys in _FIXED]
    return statements


def all_statements() -> list[str]:
    """Every check, as migrations 0004 to 0019 leave them (``metadata.create_all``)."""
    return [*create_statements(), *attempt_statements()]


def all_drop_statements() -> list[str]:
    """:func:`all_statements` undone (the tables stay)."""
    return [*attempt_drop_statements(), *drop_statements()]


def trigger_statement(row: tuple[str, str, str, str, str, str | None], *,
                      checked_when: bool = True) -> str:
    """One statement-level trigger's DDL (a row of ``_TRIGGERS``), with its condition
    unless not ``checked_when`` (the jobs insert trigger as migration 0004 made it,
    before 0009 gave it one)."""
    trigger, table, when, rows, function, condition = row
    guard = f" WHEN ({condition})" if condition and checked_when else ""
    return (f"CREATE TRIGGER taskyard_{trigger} {when} ON {table} REFERENCING {rows} "
            f"FOR EACH STATEMENT{guard} EXECUTE FUNCTION taskyard_{function}()")


def jobs_refer_statements(*, checked_when: bool) -> list[str]:
    """Migration 0009 (and back): the jobs insert trigger made again, with or without
    its condition."""
    return ["DROP TRIGGER IF EXISTS taskyard_jobs_refer ON jobs",
            trigger_statement(_TRIGGERS[0], checked_when=checked_when)]


def drop_statements() -> list[str]:
    """The DDL that removes them again (the tables stay)."""
    triggers = [(trigger, table) for trigger, table, *_ in (*_TRIGGERS, *_FIXED)]
    return [
        *(f"DROP TRIGGER IF EXISTS taskyard_{trigger} ON {table}"
          for trigger, table in triggers),
        *(f"DROP FUNCTION IF EXISTS taskyard_{name}()" for name in FUNCTIONS),
    ]
