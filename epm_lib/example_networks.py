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

:func:`planted_partition` is the community network of chapters ``29_where_a_chain_starts`` and
``29b_checking_starts`` and of ``benchmarks/bench_starts.py``: networkx's planted partition graph
with its nodes shuffled, so that no group is a block of consecutive rows.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["binary", "networkx_examples", "planted_partition"]


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


def planted_partition(groups=12, size=10, p_in=0.7, p_out=0.03, seed=1, shuffle_seed=0):
    """``(A, blocks)``: ``nx.planted_partition_graph(groups, size, p_in, p_out, seed=seed)`` as a binary
    symmetric int8 CSR matrix with its nodes in the order ``default_rng(shuffle_seed).permutation``, and
    the planted group of each row. The defaults are the network of chapter 29 (120 nodes, 562 links)."""
    import networkx as nx

    G = nx.planted_partition_graph(groups, size, p_in, p_out, seed=seed)
    perm = np.random.default_rng(shuffle_seed).permutation(G.number_of_nodes())
    A = nx.to_scipy_sparse_array(G, nodelist=[int(v) for v in perm], format="csr")
    return binary(A), np.array([G.nodes[int(v)]["block"] for v in perm])
