"""Small conversations shared by tests (speaker, text)."""

from __future__ import annotations

TALK = [
    ("Ada", "I adopted a grey cat called Pixel last spring."),
    ("Bo", "Lovely! Does Pixel like the garden?"),
    ("Ada", "She hunts moths in the garden every evening."),
    ("Bo", "My band played a gig at the harbour on Friday."),
    ("Ada", "I am learning to bake sourdough bread this month."),
    ("Bo", "We booked a trip to Lisbon for the autumn holidays."),
    ("Ada", "Pixel the cat slept on my sourdough starter, sadly."),
    ("Bo", "The harbour gig went well, we sold every ticket."),
]
"""Eight turns of two speakers on four topics (a cat, a band, baking, a trip)."""
