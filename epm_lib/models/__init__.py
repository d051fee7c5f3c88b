"""The samplers, one module per family (Part II of the book).

- ``gamma_epm``: EPM (Appendix A) and CEPM (Appendix B), gamma factors U, V
- ``depm``:      DEPM (Appendix C), Dirichlet columns phi, psi
- ``idepm``:     IDEPM (Sec. 4.3, Appendix E), collapsed Gibbs over the seating of customers
- ``common``:    the m-step and other kernels they share
"""
from . import common, gamma_epm, depm, idepm  # noqa: F401
