"""``instruction``: instruction adherence. A rule is given once, as a line of a user turn at the
asked depth ("from now on, report durations in milliseconds", "never suggest library X", "end
every answer with the ticket id T-1234", "answer only with JSON holding field Y"), with invented
specifics per case; the final task's reply is checked for compliance (``scoring.instruction``).

The evidence-absent control keeps the check: without the instruction, compliance is the base rate
by chance (a reply in seconds, naming the library everyone names, never ending with a ticket id
nobody mentioned). In session filler the instruction goes in a user turn whatever
``filler.turn`` says; in static filler it is a line of the context.
"""

from __future__ import annotations

from rotscope.tasks import DEFAULT_CASES, FamilyHooks, register_counted_cases
from rotscope.tasks.invented import Inventor, check_count
from rotscope.types import Case, Evidence, Oracle

MAX_INSTRUCTION_CASES = 200
_LIBRARIES = (
    ("requests", "send an HTTP request to a REST API"),
    ("pandas", "load a CSV file into a table and group its rows"),
    ("numpy", "multiply two large matrices"),
    ("matplotlib", "draw a line chart of a time series"),
    ("pytest", "write and run unit tests"),
    ("flask", "serve a small web API"),
)
_QUESTIONS = (
    "In one sentence, what should we check next about the {name} module?",
    "In one sentence, why might the {name} job be slow?",
    "In one sentence, what does the {name} service do?",
)


def _case(index: int, inventor: Inventor) -> Case:
    rule = ("ms", "avoid", "ticket", "json")[index % 4]
    name = inventor.name()
    question = _QUESTIONS[index // 4 % len(_QUESTIONS)].format(name=name)
    guarded: tuple[str, ...] = ()
    if rule == "ms":
        seconds = inventor.number(2, 95) / 10
        text = (
            f"From now on, report every duration in milliseconds, never in seconds or minutes (team {name})."
        )
        question = f"The {name} build step took {seconds} seconds. How long did the {name} build step take?"
        answer = "ms"
    elif rule == "avoid":
        library, job = _LIBRARIES[index // 4 % len(_LIBRARIES)]
        text = f"Never suggest the {library} library in any answer: the {name} team has banned it."
        question = f"Which Python library would you use to {job}? Name one."
        answer = f"avoid:{library}"
    elif rule == "ticket":
        ticket = f"T-{inventor.number(1000, 9999)}"
        text = f"From now on, end every answer with the ticket id {ticket}."
        answer, guarded = f"ticket:{ticket}", (ticket,)
    else:
        field = f"{inventor.name().lower()}_status"
        text = f'From now on, answer only with a JSON object that has the field "{field}".'
        answer, guarded = f"json:{field}", (field,)
    return Case(
        case_id=f"instruction-{index + 1:02d}",
        task="instruction",
        evidence=(Evidence(evidence_id="instruction", text=text, turn="user"),),
        question=question,
        oracle=Oracle(answer=answer, kind="instruction"),
        guarded=guarded,
        slices=(("rule", rule),),
    )


@register_counted_cases("instruction", MAX_INSTRUCTION_CASES, hooks=FamilyHooks(control_kind="compliance"))
def build_instruction_cases(count: int = DEFAULT_CASES) -> list[Case]:
    check_count("instruction", count, MAX_INSTRUCTION_CASES, "invented names and ids stay unique")
    inventor = Inventor("instruction")
    return [_case(index, inventor) for index in range(count)]
