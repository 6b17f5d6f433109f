"""What the simulator is made of: personas, question kinds and cues, topics, students.

Everything a student or the rater reacts to is expressed on seven style attributes.
Personas have a style vector; a question's kind and its first-person cue make a demand
vector on the same attributes; a student weighs styles with a base taste, responds to
demands with per-attribute sensitivities, and may carry quirks (non-linear rules that no
linear model on Phi can express).
"""
from __future__ import annotations

import numpy as np

ATTRIBUTES = ("rigor", "examples", "dialogue", "intuition", "brevity", "structure", "warmth")
_A = {a: i for i, a in enumerate(ATTRIBUTES)}


def vec(**kw) -> np.ndarray:
    """A style vector from attribute=value keywords (unnamed attributes are 0)."""
    v = np.zeros(len(ATTRIBUTES))
    for k, x in kw.items():
        v[_A[k]] = x
    return v


# name, short name, style vector (each attribute in [0, 1])
PERSONAS = (
    ("Rigorous prover", "Prover", vec(rigor=1.0, examples=0.1, brevity=0.4, structure=0.5)),
    ("Worked examples", "Examples", vec(rigor=0.3, examples=1.0, intuition=0.2, brevity=0.3, structure=0.5, warmth=0.2)),
    ("Socratic guide", "Socratic", vec(rigor=0.3, examples=0.2, dialogue=1.0, intuition=0.4, brevity=0.5, structure=0.2, warmth=0.6)),
    ("Intuition and analogy", "Intuition", vec(rigor=0.1, examples=0.3, intuition=1.0, brevity=0.3, structure=0.1, warmth=0.5)),
    ("Concise cheat-sheet", "Concise", vec(rigor=0.5, examples=0.1, brevity=1.0, structure=0.6)),
    ("Step-by-step coach", "Coach", vec(rigor=0.1, examples=0.4, dialogue=0.1, intuition=0.2, brevity=0.0, structure=1.0, warmth=0.8)),
)
PERSONA_STYLE = np.stack([p[2] for p in PERSONAS])          # [K, attributes]
PERSONA_SHORT = tuple(p[1] for p in PERSONAS)

KIND_DEMAND = {
    "definition": vec(rigor=0.3, intuition=0.3, brevity=0.3),
    "computation": vec(examples=0.6, structure=0.5, intuition=-0.2),
    "why": vec(rigor=0.5, intuition=0.5, examples=-0.3, brevity=-0.2),
}

# Thirteen first-person cues a question can end with, and what each asks for.
CUES = (
    ("I have an exam tomorrow and need a sentence I can memorise.", vec(brevity=1.0, rigor=0.5, dialogue=-0.5)),
    ("Let me see it done once with real numbers so I can repeat it.", vec(examples=1.0, structure=0.6)),
    ("Skip the walkthrough, I am after the reason it is true.", vec(rigor=1.0, examples=-0.6, intuition=0.2)),
    ("These words are all new to me and symbols alone lose me.", vec(intuition=1.0, warmth=0.4, rigor=-0.5)),
    ("Please go slowly, one step and then the next.", vec(structure=1.0, warmth=0.3, brevity=-0.3)),
    ("I only have a couple of minutes.", vec(brevity=1.0, dialogue=-0.6, structure=0.2)),
    ("Give me hints, I would like to get there on my own.", vec(dialogue=1.0, examples=-0.3)),
    ("I do not see the point of this yet.", vec(intuition=0.8, warmth=0.3, rigor=-0.2)),
    ("I keep getting it wrong and it is wearing me down.", vec(warmth=1.0, structure=0.5, dialogue=0.2)),
    ("I will have to explain this to my study group.", vec(examples=0.5, intuition=0.5, structure=0.3)),
    ("Hand-waving confuses me, state it exactly.", vec(rigor=0.9, brevity=0.3, intuition=-0.5)),
    ("Start with the big picture, details later.", vec(intuition=0.8, brevity=0.3, structure=-0.3)),
    ("Check whether I actually understood it.", vec(dialogue=0.9, rigor=0.3)),
)
CUE_DEMAND = np.stack([c[1] for c in CUES])                 # [13, attributes]

DEV_TOPICS = (
    "limits", "derivatives", "the chain rule", "integration by parts", "Riemann sums",
    "Taylor series", "eigenvalues", "matrix rank", "linear independence", "determinants",
    "conditional probability", "Bayes' rule", "expected value", "variance", "the normal distribution",
    "hypothesis tests", "modular arithmetic", "induction proofs", "graph connectivity", "recursion",
    "big-O notation", "vectors", "complex numbers", "logarithms",
)
TEST_TOPICS = (
    "amplitude modulation", "equilibria of autonomous ODEs", "the squeeze theorem", "Fourier series",
    "Lagrange multipliers", "the central limit theorem", "Markov chains", "orthogonal projections",
    "partial fractions", "the mean value theorem", "convolution", "gradient descent",
    "entropy", "the binomial theorem", "polar coordinates", "improper integrals",
    "least squares", "the pigeonhole principle", "separable differential equations", "power series",
    "simple harmonic motion", "confidence intervals", "matrix inverses", "set cardinality",
)
QUESTION_FORMS = {
    "definition": "What is meant by {topic}{variant}?",
    "computation": "Work through a concrete {topic} problem{variant}.",
    "why": "Why does {topic} behave the way it does{variant}?",
}
CHAIN_VARIANTS = ("", " in a second setting")
