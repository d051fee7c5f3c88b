"""Three small networks that ship with networkx, as the binary matrices the models take.

Chapters ``30_your_network`` (the recipe, the memberships) and ``30b_link_prediction`` (link
prediction against baselines, chains from several starts) both run on them:

- ``"Davis"``: Davis's Southern Women (``nx.davis_southern_women_graph``), which of 18 women attended
  which of 14 events: bipartite, an 18 x 14 matrix (rows: the graph's ``top`` nodes, columns: its
  ``bottom`` nodes, in the graph's order);
- ``"karate"``: Zachary's karate club (``nx.karate_club_graph``), 34 x 34, undirected (symmetric);
- ``"Les Mis"``: the co-appearance network of Les Misérables (``nx.les_miserables_graph``),
  77 x 77, undirected; a link is a weight above zero.

Nodes are in networkx's order (``list(G)``), so row ``i`` of the karate matrix is node ``i``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["binary", "networkx_examples"]


def binary(M) -> sp.csr_matrix:
    """The 0/1 int8 CSR matrix of a weighted adjacency or biadjacency matrix (weight > 0 -> 1)."""
    return sp.csr_matrix((sp.csr_matrix(M) > 0).astype(np.int8))


def networkx_examples() -> dict:
    """``{name: (X, undirected)}`` for ``"Davis"``, ``"karate"`` and ``"Les Mis"`` (module docstring):
    ``X`` a binary int8 CSR matrix, ``undirected`` whether it is a symmetric adjacency matrix (fit it
    with ``symmetric=True``) rather than a bipartite one."""
    import networkx as nx

    davis, karate, lesmis = nx.davis_southern_women_graph(), nx.karate_club_graph(), nx.les_miserables_graph()
    return {
        "Davis": (binary(nx.bipartite.biadjacency_matrix(davis, davis.graph["top"], davis.graph["bottom"])), False),
        "karate": (binary(nx.to_scipy_sparse_array(karate)), True),
        "Les Mis": (binary(nx.to_scipy_sparse_array(lesmis)), True),
    }
