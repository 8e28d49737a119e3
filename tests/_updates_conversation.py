"""An 80-message conversation (our own text) in which four things the user said change later:
a job, a car, a wedding date the user's sister moved, and an allergy. Eight sessions of ten
messages, two weeks apart; the old values come in sessions 1-3, the new ones in 5-8."""

from __future__ import annotations

from datetime import datetime, timedelta

from mnemon_langgraph.types import Message

START = datetime(2024, 1, 5, 18, 0)

SESSIONS: list[list[str]] = [
    [  # 1: the job and the car, as they are at first
        "Hi! I'm Maya. I work night shifts as a nurse at St Mary's Hospital, on the cardiac ward.",
        "Nice to meet you, Maya. Night shifts on a cardiac ward sound demanding.",
        "They are. I drive a silver Honda Civic to the hospital, it is twenty minutes away.",
        "A reliable car for a night commute. Do you park on site?",
        "Yes, staff parking behind the east wing. I sleep until two most afternoons.",
        "Blackout curtains help a lot with daytime sleep.",
        "I got some last year. Can you suggest a quick dinner I can take to work?",
        "A lentil and spinach curry keeps well and reheats in minutes.",
        "Perfect, I will make a big batch on Sunday.",
        "Enjoy it, and good luck with this week's shifts.",
    ],
    [  # 2: no allergies, yet
        "I'm planning a dinner party for eight friends next month.",
        "Fun! Do any guests have dietary needs?",
        "Two are vegetarian. I'm not allergic to anything myself, so I can taste everything.",
        "That makes testing recipes easy. What style of food do you like?",
        "Thai food, mostly. I love satay and a good green curry.",
        "A satay skewer starter and a green curry main would work well.",
        "Great idea. What dessert goes with that?",
        "Mango sticky rice is a classic finish.",
        "I will buy the mangoes at the market on Saturday.",
        "Sounds like a lovely menu.",
    ],
    [  # 3: the wedding date, first
        "Big news: my sister Jenna is getting married on June 14 at the lake house.",
        "Congratulations to Jenna! Are you in the wedding party?",
        "I'm her maid of honour, so I'm planning the bridal shower too.",
        "How exciting. When is the shower?",
        "Probably in May, three weeks before the wedding.",
        "That gives guests time to plan around it.",
        "I need a dress in sage green for the wedding.",
        "Sage green suits a lakeside summer wedding.",
        "I'll look for one with pockets, obviously.",
        "Pockets make any dress better.",
    ],
    [  # 4: unrelated
        "I started training for a half marathon in the autumn.",
        "Nice goal. How far do you run now?",
        "About eight kilometres, three times a week.",
        "Add one longer run each week and build up slowly.",
        "My book club is reading a novel about lighthouse keepers this month.",
        "That sounds atmospheric. Are you enjoying it?",
        "Very much, the storms are described so well.",
        "Storm scenes can make a book hard to put down.",
        "I read it on my breaks.",
        "A good way to unwind during a busy day.",
    ],
    [  # 5: the job changes
        "Update on work: I left St Mary's. I now work as a school nurse at Oakridge Primary.",
        "That is a big change! How are the first weeks at Oakridge?",
        "Wonderful. Day hours at last, I finish at half past three.",
        "No more night shifts must feel great.",
        "It does. The children mostly come in with scraped knees.",
        "School nursing has its own rhythm.",
        "I'm setting up a hand-washing poster competition.",
        "The children will love designing posters.",
        "The winner gets to name the class hamster.",
        "A prize worth winning!",
    ],
    [  # 6: the car changes
        "I sold the Civic last weekend and bought a blue Tesla Model 3.",
        "An electric car! How do you like driving it?",
        "It is so quiet. I charge it at home overnight.",
        "Home charging is the easiest way.",
        "The school even has two charging spots in the car park.",
        "Handy for topping up during the day.",
        "I'm still learning the one-pedal driving.",
        "It takes a few days to get used to.",
        "I keep braking too early.",
        "You'll adapt quickly.",
    ],
    [  # 7: the sister moves the wedding
        "Jenna called: she moved the wedding to September 20, the lake house was double-booked.",
        "Oh no, but good that she found a new date. Is it still at the lake house?",
        "Yes, same place, just the later date. So the shower moves to late August.",
        "September by the lake should still be lovely.",
        "I might need a warmer wrap over the sage dress.",
        "A light cashmere wrap would match well.",
        "Good idea, I'll look for one in cream.",
        "Cream and sage go nicely together.",
        "Jenna is relieved it's sorted.",
        "I'm glad it worked out for her.",
    ],
    [  # 8: the allergy
        "I had a scary reaction at a restaurant. Turns out I'm allergic to peanuts after all.",
        "That sounds frightening. Are you all right now?",
        "Yes, the allergist confirmed it and I carry an EpiPen now.",
        "Carrying an EpiPen is the right call.",
        "So no satay at my dinner party any more.",
        "A coconut and lime skewer could replace the satay.",
        "I'll try that, it sounds fresh.",
        "Let me know how it turns out.",
        "Will do. I'm reading every label now.",
        "That's wise with a peanut allergy.",
    ],
]

QUESTIONS: dict[str, tuple[str, str, str]] = {
    # what is asked: (question, the old value's words, the new value's words)
    "job": ("Where do I work?", "St Mary's Hospital", "Oakridge Primary"),
    "car": ("What car do I drive?", "silver Honda Civic", "blue Tesla Model 3"),
    "wedding": ("When is my sister Jenna's wedding?", "June 14", "September 20"),
    "allergy": ("Am I allergic to anything?", "not allergic to anything", "allergic to peanuts"),
}


def messages() -> list[Message]:
    """The 80 messages, Maya (``user``) and the assistant, session by session."""
    out: list[Message] = []
    for s, turns in enumerate(SESSIONS, start=1):
        day = START + timedelta(days=14 * (s - 1))
        for i, text in enumerate(turns):
            role = "user" if i % 2 == 0 else "assistant"
            speaker = "Maya" if role == "user" else "assistant"
            when = day + timedelta(minutes=i)
            out.append(Message(text, speaker, role, f"s{s}-{i}", when, s))
    return out
