"""Each built-in component is named in ``src/`` only by its own module (and the entry-point list in
pyproject.toml): a quoted string literal that is a built-in's registered name, or starts with it and
``/`` or ``:`` (``"llamacpp/PATH"``), anywhere else is listed below with why it is there, and a new
one fails (``python -m tests.support.component_names`` prints the hits as this table's lines).

A hit that is fixed must leave the table too: the table is what is left to do, and a count that
no longer matches fails as a new hit does."""

from __future__ import annotations

from tests.support.component_names import builtin_names, hits, is_own

CONFIG = (
    "the experiment file's defaults and built-in sections (config/experiment.py, config/sections.py): moving "
    "them into their components is open (ARCHITECTURE.md, 'What is left for later')"
)
HOMONYM = "a homonym, not the component: a JSON field, a format key or a word that a name happens to be"
ANSWER_KIND = (
    "a task family declaring the answer kind of its oracles: the registered name it refers to, "
    "as a foreign key"
)
PUBLISHED = (
    "Inspect's published tasks rotscope/niah and rotscope/nolima (`inspect eval rotscope/niah`): a "
    "stable outside interface with its own signature; any family, built-in or outside, runs as "
    "rotscope/experiment through the task registry, so a new family needs no new Inspect task"
)

ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    # The experiment file: built-in defaults and sections, not yet registered by their components.
    ("cases", "src/rotscope/config/experiment.py"): (2, CONFIG),
    ("niah", "src/rotscope/config/experiment.py"): (2, CONFIG),
    ("readinglog", "src/rotscope/config/experiment.py"): (1, CONFIG),
    ("replay", "src/rotscope/config/experiment.py"): (2, CONFIG),
    ("code", "src/rotscope/config/sections.py"): (2, CONFIG),  # the default kind; filler.order is code's
    ("remote", "src/rotscope/config/sections.py"): (
        1,
        "the judge's own remote section, validated as the remote section (SectionOf)",
    ),
    ("remote", "src/rotscope/cli/run.py"): (
        1,
        "the remote section's key, set by the --base-url/--api-key-env flags",
    ),
    ("remote", "src/rotscope/cli/canary.py"): (
        1,
        "the remote section's key, set by the canary's --base-url/--api-key-env flags, as run's",
    ),
    ("remote", "src/rotscope/execution/workflows/run_steps.py"): (
        1,
        "the judge's remote section, passed on as a section key",
    ),
    ("session", "src/rotscope/config/sections.py"): (3, CONFIG),
    ("session", "src/rotscope/execution/state/unfinished.py"): (
        1,
        HOMONYM + ": the run metadata's `session` key (a --models subject's session folder)",
    ),
    ("text", "src/rotscope/config/sections.py"): (1, CONFIG),
    # The Inspect integration's published tasks.
    ("niah", "src/rotscope/integrations/inspect/registry.py"): (1, PUBLISHED),
    ("nolima", "src/rotscope/integrations/inspect/registry.py"): (1, PUBLISHED),
    ("niah", "src/rotscope/integrations/inspect/tasks.py"): (1, PUBLISHED),
    ("nolima", "src/rotscope/integrations/inspect/tasks.py"): (1, PUBLISHED),
    # Answer kinds: the registered names a family's oracles or a default refer to.
    ("set", "src/rotscope/tasks/aggregation.py"): (1, ANSWER_KIND),
    ("set", "src/rotscope/tasks/variable_tracking.py"): (1, ANSWER_KIND),
    ("number", "src/rotscope/tasks/competitive.py"): (3, ANSWER_KIND),
    ("reply", "src/rotscope/tasks/coreference/content.py"): (1, ANSWER_KIND),
    ("choice", "src/rotscope/tasks/reasoning/items.py"): (1, ANSWER_KIND),
    ("number", "src/rotscope/tasks/reasoning/items.py"): (2, ANSWER_KIND),
    ("number", "src/rotscope/tasks/reasoning/layout.py"): (1, ANSWER_KIND + " (its final-answer line)"),
    ("phrase", "src/rotscope/tasks/case_lines.py"): (1, "a case-file line holds a phrase oracle only"),
    ("phrase", "src/rotscope/types/case.py"): (1, "the default answer kind of an Oracle"),
    ("phrase", "src/rotscope/prompt/builder.py"): (1, "the default answer kind of a frame, as Oracle's"),
    ("phrase", "src/rotscope/prompt/frame.py"): (
        1,
        "the fixed footer's instruction is the default answer kind's",
    ),
    ("instruction", "src/rotscope/types/case.py"): (
        1,
        "an instruction oracle is kept whole in a multi-question case: an instruction to follow, not a fact",
    ),
    ("instruction", "src/rotscope/prompt/session.py"): (
        2,
        "an instruction case's session turn is its instruction alone, as in its static prompt",
    ),
    # A family's own analysis, read by a view by its summary key (views may not import families).
    ("nolima", "src/rotscope/search/decisions.py"): (
        2,
        "a search's threshold definition `nolima-0.85`, after NoLiMa's relative threshold, not the family",
    ),
    ("nolima", "src/rotscope/report/sentence.py"): (1, "the same threshold definition, worded"),
    ("nolima", "src/rotscope/analysis/definitions.py"): (
        2,
        "the threshold definition `nolima-0.85`'s source line and short source, keyed by its id",
    ),
    # Stored formats.
    ("session", "src/rotscope/execution/state/run_folder.py"): (
        1,
        "the run folder's subfolder of a self-written session's transcript: a stored layout",
    ),
    ("session", "src/rotscope/plan/workitems.py"): (
        1,
        "the corpus record's key for the session filler's description: stored in run folders",
    ),
    # Named in words only.
    **{
        (family, "src/rotscope/plan/separations.py"): (
            1,
            "the refusal of placement.separations names the built-in families that combine facts",
        )
        for family in ("latent", "join", "multihop")
    },
    ("cases", "src/rotscope/plan/manifest.py"): (
        2,
        "the manifest's `cases` group (the case set's digest): a stored key",
    ),
    ("cases", "src/rotscope/cli/plan.py"): (1, "the manifest's `cases` group, printed"),
    ("cases", "src/rotscope/cli/cases.py"): (
        3,
        "the `rotscope cases` command, its output's name and `cases check`'s usage line",
    ),
    ("cases", "src/rotscope/tasks/coreference/__init__.py"): (
        1,
        "the corpus record's count of conversations",
    ),
    # Owned by other changes of this issue.
    ("cases", "src/rotscope/gate/run_record.py"): (1, HOMONYM + " (the manifest's cases group)"),
    ("cases", "src/rotscope/gate/judgement.py"): (1, HOMONYM + " (the gate's clusters in words)"),
    ("number", "src/rotscope/records/cells.py"): (1, HOMONYM + " (a JSON schema type)"),
    # Homonyms.
    ("text", "src/rotscope/backends/anthropic.py"): (3, HOMONYM + ": the Messages API's text content block"),
    ("text", "src/rotscope/backends/llamacpp/backend.py"): (
        1,
        HOMONYM + ": llama-cpp-python's completion field",
    ),
    ("set", "src/rotscope/backends/llamacpp/backend.py"): (
        2,
        HOMONYM + ": 'set' in the config, as an engine line says",
    ),
    ("text", "src/rotscope/backends/serve/backend.py"): (1, HOMONYM + ": the completions reply's text field"),
    ("vllm", "src/rotscope/backends/serve/backend.py"): (
        2,
        HOMONYM + ": a server's software, its /v1/models owner",
    ),
    ("llamacpp", "src/rotscope/backends/serve/backend.py"): (
        3,
        HOMONYM + ": a server's software, its /v1/models owner",
    ),
    ("llamacpp", "src/rotscope/backends/serve/likelihood.py"): (
        1,
        HOMONYM + ": the server's software that reads no likelihood",
    ),
    ("vllm", "src/rotscope/backends/serve/options.py"): (1, HOMONYM + ": serve.kind, a server's software"),
    ("llamacpp", "src/rotscope/backends/serve/options.py"): (
        1,
        HOMONYM + ": serve.kind, a server's software",
    ),
    ("text", "src/rotscope/filler/session.py"): (4, HOMONYM + ": a chat message's text content part"),
    ("text", "src/rotscope/execution/state/run_folder.py"): (1, HOMONYM + ": an evidence span's text"),
    ("text", "src/rotscope/gate/pairing.py"): (1, HOMONYM + ": a stored span's text"),
    ("text", "src/rotscope/report/html.py"): (1, HOMONYM + ": a stored span's text"),
    ("text", "src/rotscope/report/names.py"): (1, HOMONYM + ": an example in a comment on shortening paths"),
    ("text", "src/rotscope/tasks/case_lines.py"): (1, HOMONYM + ": a case-file line's evidence text"),
    ("text", "src/rotscope/tasks/competitive.py"): (1, HOMONYM + ": a decoy's text"),
    ("text", "src/rotscope/tasks/reasoning/items.py"): (2, HOMONYM + ": a dataset record's choice texts"),
    ("text", "src/rotscope/tasks/replay/records.py"): (1, HOMONYM + ": a recording's evidence text"),
    ("reply", "src/rotscope/tasks/coreference/layout.py"): (1, HOMONYM + ": a conversation's reply turn"),
    ("number", "src/rotscope/config/reference.py"): (1, HOMONYM + ": JSON Schema's number type"),
    ("fake", "src/rotscope/tokenizers/local.py"): (1, HOMONYM + ": the fake tokenizer's name, `fake:regex`"),
    ("llamacpp", "src/rotscope/tokenizers/local.py"): (
        1,
        HOMONYM + ": the GGUF tokenizer's name, stored in runs",
    ),
    ("hf", "src/rotscope/tokenizers/remote.py"): (
        1,
        HOMONYM + ": the tokenizer.json tokenizer's name, stored in runs",
    ),
    # The run meta's key for a --models session (as "pair" is for --pair), not the session filler.
    ("session", "src/rotscope/modes/session_run.py"): (
        1,
        HOMONYM + ": the run meta's `session` key of a --models session",
    ),
    ("session", "src/rotscope/execution/workflows/runner.py"): (
        1,
        HOMONYM + ": the run meta's `session` key of a --models session",
    ),
    # The monitor's refused field names: words for text in a production record, not components.
    ("instruction", "src/rotscope/monitor/schema.py"): (
        1,
        "the monitor's allow-list refuses fields named for text; a field name, not the component",
    ),
    ("text", "src/rotscope/monitor/schema.py"): (
        1,
        "the monitor's allow-list refuses fields named for text; a field name, not the component",
    ),
    ("reply", "src/rotscope/monitor/schema.py"): (
        1,
        "the monitor's allow-list refuses fields named for text; a field name, not the component",
    ),
}


def test_no_module_names_a_built_in_component_outside_this_table() -> None:
    found = hits()
    new = {key: count for key, count in found.items() if ALLOWED.get(key, (0, ""))[0] != count}
    gone = {key: allowed for key, (allowed, _) in ALLOWED.items() if key not in found}
    assert not new, f"built-in names outside their modules (fix, or add with a reason): {new}"
    assert not gone, f"no longer found (take them out of ALLOWED): {gone}"


def test_the_search_sees_a_name_outside_its_module_and_not_inside() -> None:
    names = builtin_names()
    assert names["llamacpp"] == {"rotscope.backends.llamacpp.backend", "rotscope.backends.llamacpp.options"}
    assert names["instruction"] == {"rotscope.tasks.instruction", "rotscope.scoring.instruction"}
    assert is_own("rotscope.backends.llamacpp.backend", names["llamacpp"])
    assert is_own("rotscope.backends.llamacpp.doctor", names["llamacpp"]), "a helper beside it"
    assert is_own("rotscope.tasks.reasoning.items", names["reasoning"]), "a module of its package"
    assert not is_own("rotscope.backends.hf.backend", names["llamacpp"])
    assert not is_own("rotscope.execution.doctor", names["llamacpp"])
    assert ("niah", "src/rotscope/integrations/inspect/tasks.py") in hits()
