"""Closed-class words: the quickstart's, with their German counterparts (personal pronouns, possessive and
numeral determiners, subordinating and coordinating conjunctions), and the Wikipedia generator's ordinal
numbers and month names."""

from __future__ import annotations

from macaron_synthetic.lexicon.tables import words

POSSESSIVES = {"my": "mein", "your": "dein", "his": "sein", "her": "ihr", "our": "unser", "their": "ihr"}
NUMERALS = {"two": "zwei", "three": "drei", "four": "vier", "five": "fünf", "many": "viele", "some": "einige"}
PRONOUNS = {  # person key → (English subject, English object, German nom, acc, dat)
    "1sg": ("I", "me", "ich", "mich", "mir"),
    "2sg": ("you", "you", "du", "dich", "dir"),
    "3sg:m": ("he", "him", "er", "ihn", "ihm"),
    "3sg:f": ("she", "her", "sie", "sie", "ihr"),
    "1pl": ("we", "us", "wir", "uns", "uns"),
    "3pl": ("they", "them", "sie", "sie", "ihnen"),
}
SUBORDINATORS = (("because", "weil"), ("although", "obwohl"), ("while", "während"))
COORDINATORS = (("and", "und"), ("but", "aber"), ("or", "oder"))
MONTHS = words("January February March April May June July August September October November December")
ORDINALS = words("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth")
CENTURIES = words(
    "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
)
