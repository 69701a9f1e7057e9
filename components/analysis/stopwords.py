"""The stopwords the diagnosis ignores in questions and answers (:mod:`components.analysis.diagnosis`).

The lexical rule's own list (bm25s's 33 English words, :mod:`components.judges.lexical_judge`) keeps
words such as "my", "has", "can", "what", "does": the judge and the retrievers index them, but as
question terms they say nothing of the topic, and a question's "missing" terms were mostly such
words. :data:`STOPWORDS` is a standard English list (pronouns, auxiliaries, determiners,
prepositions, conjunctions, question words) plus the verbs and fillers a user's question is made
of ("want", "get", "use", "way", "thing", "happen"…). A word is dropped when its lower-cased form is
listed, before stemming (the tokeniser splits "can't" into "can" and "t": the stumps of
contractions are listed too). "else" and "try", English stopwords that are also keywords of the
built-in corpus's language, are kept as terms.
"""

from __future__ import annotations

STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't done down during each
either even ever every few for from further get gets getting got had hadn't has hasn't have haven't having he
her here hers herself him himself his how i i'd i'll i'm i've if in into is isn't it it's its itself just let let's
like many may me might more most much must mustn't my myself need needs neither no nor not now of off often on once
one only or other others our ours ourselves out over own per please quite rather really same several shall she
should shouldn't so some still such than that that's the their theirs them themselves then there there's these
they they're this those though through to too under until up upon us very via was wasn't way ways we we're were
weren't what what's when where which while who whom whose why will with within without won't would wouldn't yes yet
you you're your yours yourself yourselves
actually always anything something someone somewhere sometimes thing things stuff want wants wanted trying tried
use used using uses make makes made making work works working happen happens happened happening keep keeps seem
seems see know able instead exactly clearly suddenly just simply kind sort lot lots
go goes going gone come comes give gives take takes put puts away back again
isn aren wasn weren doesn don didn hasn haven hadn couldn wouldn shouldn won mustn ll ve re
""".split())
