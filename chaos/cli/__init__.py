"""The ``sharetxn`` command line (``chaos.cli.main``) and its commands.

It lives under ``chaos``, the one package DESIGN §2 lets import everything: the broker
(``sharetxn broker``), the client library, the recovery tool and the harness.  Nothing outside
this package imports it (tests/unit/test_layout.py); docs/design.md ("Repository and
layering") says why here.
"""
