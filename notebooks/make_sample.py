"""Write ``notebooks/data/allotment_year.json``: an invented conversation for the notebooks.

The package's own sample (``mnemon demo``) has 40 short messages, so every View holds all of
memory and "is the evidence in the View?" means nothing. This one has ten sessions over a year
between two friends, Mira and Tomás: 600 turns of everyday chatter with a few facts that
change (a new job, a failed crop, a switched race). It is written in the LoCoMo file layout
(``session_N``, ``session_N_date_time``, ``qa`` with ``evidence`` turn ids) so the notebooks
load it with ``load_locomo`` and score it with ``mnemon eval locomo``; its text and questions
are original, generated from the templates below with a fixed seed (run this script to
rebuild it; the output is byte-for-byte the same).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "allotment_year.json"
SPEAKERS = ("Mira", "Tomás")
DATES = [
    "7:10 pm on 14 January, 2024",
    "10:30 am on 3 February, 2024",
    "6:45 pm on 10 March, 2024",
    "8:00 pm on 21 April, 2024",
    "9:15 am on 30 May, 2024",
    "5:30 pm on 22 June, 2024",
    "7:50 pm on 28 July, 2024",
    "11:00 am on 1 September, 2024",
    "4:20 pm on 13 October, 2024",
    "8:35 pm on 24 November, 2024",
]
# (session, speaker index, key, text): the facts the questions are about.
FACTS = [
    (
        1,
        0,
        "job1",
        "Big news: I started a new job last Monday, as an archivist at the Harbour Library.",
    ),
    (1, 1, "ines1", "My sister Ines is moving to Lisbon in March, she found a teaching post."),
    (2, 0, "plot", "We finally got an allotment! Plot number 47, right by the canal."),
    (
        3,
        1,
        "ines2",
        "Ines moved to Lisbon last week; she teaches chemistry at a secondary school there now.",
    ),
    (3, 0, "plant1", "I planted broad beans and two rows of garlic on the plot this weekend."),
    (4, 0, "cat", "Juniper, my cat, had to have a tooth removed. The vet bill was 180 pounds."),
    (
        5,
        1,
        "race1",
        "I signed up for the Bristol half marathon in October. Training starts Monday.",
    ),
    (
        6,
        0,
        "plant2",
        "Blackfly ate the broad beans, so I pulled them all out and planted courgettes instead.",
    ),
    (
        7,
        0,
        "job2",
        "I left the Harbour Library. I'm cataloguing old maps at the university now, much quieter.",
    ),
    (8, 1, "race2", "I hurt my knee, so I switched from the half marathon to the 10k in October."),
    (9, 1, "race3", "I ran the 10k last Sunday in 52 minutes, knee held up fine!"),
    (
        10,
        0,
        "plot2",
        "We're giving up plot 47 in December; a family from the waiting list gets it.",
    ),
]
QUESTIONS = [
    ("Where does Mira work now?", ["job2"], 4, "cataloguing maps at the university"),
    ("What did Mira grow after the broad beans failed?", ["plant2"], 4, "courgettes"),
    ("When did Ines move to Lisbon?", ["ines2"], 2, "early March 2024"),
    ("What does Tomás's sister do in Lisbon?", ["ines1", "ines2"], 1, "teaches chemistry"),
    ("How much was Juniper's vet bill?", ["cat"], 4, "180 pounds"),
    ("Which race did Tomás run in the end, and how fast?", ["race2", "race3"], 1, "10k, 52 min"),
    ("What is the number of Mira's allotment plot?", ["plot"], 4, "47"),
    ("When did Mira change jobs?", ["job2"], 2, "July 2024"),
    ("Why did Tomás switch races?", ["race2"], 4, "he hurt his knee"),
    ("What happens to the allotment in December?", ["plot2"], 2, "a waiting-list family"),
    ("Would Mira enjoy an exhibition of old maps?", ["job2"], 3, "likely yes"),
    ("What did Tomás plant on the allotment?", [], 5, None),
]

FILLER = [
    "I watched {show} last night, {opinion}.",
    "The weather here was {weather} all {day}.",
    "I cooked {dish} for {who} on {day}, {opinion2}.",
    "Work has been {mood}; we had {n} meetings about the {project}.",
    "I read a {kind} about {subject} on the train.",
    "We walked along the {place} on {day} and saw {animal}.",
    "My phone died again on {day}, I really need a new one.",
    "Did you see the news about the {project}? Everyone at work talks about it.",
    "I'm thinking of learning {skill}, maybe an evening class.",
    "The bus was {n}0 minutes late on {day}, {opinion2}.",
]
REPLIES = [
    "Sounds {adj}! {follow}",
    "Ha, {adj}. {follow}",
    "Oh no. {follow}",
    "Nice, {adj} indeed. {follow}",
]
WORDS = {
    "show": [
        "a documentary about whales",
        "the new detective series",
        "an old western",
        "a cooking contest",
        "a film about chess players",
    ],
    "opinion": ["not bad at all", "far too long", "better than I expected", "a bit silly"],
    "weather": ["grey and drizzly", "bright but cold", "windy", "surprisingly warm"],
    "day": ["Saturday", "Sunday", "Tuesday", "Friday", "week", "weekend"],
    "dish": ["a lentil curry", "mushroom risotto", "pancakes", "a big vegetable soup"],
    "who": ["friends", "my neighbours", "my parents", "the book club"],
    "opinion2": ["which was fun", "and it went fine", "not my best day", "a small victory"],
    "mood": ["busy", "slow", "chaotic", "fine"],
    "n": ["2", "3", "4", "5"],
    "project": ["new ticket system", "office move", "budget review", "website redesign"],
    "kind": ["novel", "long article", "short story", "travel book"],
    "subject": ["the Arctic", "old shipyards", "bees", "a family of clockmakers"],
    "place": ["river", "old railway path", "harbour", "park by the museum"],
    "animal": ["a heron", "two foxes", "a kingfisher", "lots of ducks"],
    "skill": ["pottery", "Portuguese", "the guitar", "bookbinding"],
    "adj": ["lovely", "exhausting", "great", "funny", "odd"],
    "follow": [
        "What's next for you this week?",
        "Tell me more next time.",
        "Same here, honestly.",
        "Did you sleep at all?",
        "I'd have done the same.",
    ],
}


def _fill(template: str, rng: random.Random) -> str:
    return template.format(**{k: rng.choice(v) for k, v in WORDS.items()})


def build(seed: int = 11, turns_per_session: int = 60) -> dict[str, object]:
    """The conversation and its questions, in the LoCoMo layout."""
    rng = random.Random(seed)
    conv: dict[str, object] = {"speaker_a": SPEAKERS[0], "speaker_b": SPEAKERS[1]}
    ids: dict[str, str] = {}
    for n, date in enumerate(DATES, start=1):
        facts = [f for f in FACTS if f[0] == n]
        slots = sorted(rng.sample(range(2, turns_per_session - 2), len(facts)))
        turns = []
        for i in range(turns_per_session):
            dia_id = f"D{n}:{i + 1}"
            fact = next((f for f, s in zip(facts, slots, strict=True) if s == i), None)
            speaker = SPEAKERS[fact[1]] if fact else SPEAKERS[i % 2]
            if fact:
                text = fact[3]
                ids[fact[2]] = dia_id
            elif i % 2:
                text = _fill(rng.choice(REPLIES), rng)
            else:
                text = _fill(rng.choice(FILLER), rng)
            turns.append({"speaker": speaker, "dia_id": dia_id, "text": text})
        conv[f"session_{n}_date_time"] = date
        conv[f"session_{n}"] = turns
    qa = []
    for question, keys, category, answer in QUESTIONS:
        row: dict[str, object] = {
            "question": question,
            "evidence": [ids[k] for k in keys],
            "category": category,
        }
        row["adversarial_answer" if category == 5 else "answer"] = answer or "not mentioned"
        qa.append(row)
    conv["qa"] = qa
    return conv


def main() -> None:
    """Write the file."""
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
