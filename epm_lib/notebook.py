"""The former home of what every chapter calls (``setup_chapter``, ``check_parameters``,
``key_result``, ``versions``, ...), kept so that ``from epm_lib.notebook import X`` still works: the
book's own modules live in ``epm_lib.book`` (here ``epm_lib.book.notebook``; no module of the library
imports them)."""
from .book.notebook import (BOOK_RC, INJECTED_HEADER, Choice, Dir, Float, Int, ListOf, Optional, Satisfies, Spec,
                            Str, book_style, check_parameters, import_arviz, injected_names, key_result,
                            quiet_first_run, setup_chapter, versions)
from .book.style import OKABE_ITO

__all__ = ["setup_chapter", "book_style", "BOOK_RC", "OKABE_ITO", "versions", "import_arviz", "quiet_first_run",
           "check_parameters", "Int", "Float", "Str", "Dir", "Choice", "ListOf", "Optional", "Satisfies", "Spec",
           "injected_names", "INJECTED_HEADER", "key_result"]
