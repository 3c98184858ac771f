"""Pod trouble in one place, found while observing and read by the lifecycle: pods that cannot start
(``stuck``, ``grace``), things asked for that do not exist (``missing``), lost nodes (``lost``).
"""
