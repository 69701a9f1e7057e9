"""Relevance labels that grow: ``python benchmark.py pool RUN... -o DIR`` (:mod:`components.pool.pool`).

The pool of the runs' top items (:mod:`~components.pool.runs`), judged once per content by the
run's judge or a panel (:mod:`~components.pool.judges`, :mod:`~components.pool.judging`), the labels
kept in a judgment store (:mod:`~components.pool.store`), reviewed with an asymmetric rule
(:mod:`~components.pool.review`) and written as qrels with their provenance (:mod:`~components.pool.files`).
"""
