"""A small shop repository with a history worth mining, for the model-backed passes' tests.

First-parent history (oldest first):

1. ``Initial shop`` — package ``shop``: orders, pricing, a FastAPI route, a pydantic entity with a
   validator (so every describe target kind but process paths has a unit to describe);
2. ``Document the shop`` — README only (docs-only: never reaches the model);
3. ``Round totals to cents (#12)`` — squash-merged PR 12: rewrites ``shop.orders.total``;
4. ``Merge branch 'tax'`` — a merge (skipped) bringing ``shop/tax.py`` from a side branch;
5. ``Validate emails strictly (#13)`` — squash-merged PR 13: rewrites ``Customer.check_email``.

Its ``origin`` is ``https://github.com/acme/shop.git`` (never contacted: ``--prs`` tests point
``KB_GITHUB_API_URL`` at a local fake).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.gitfixtures import commit_tree, init_repo, run_git

INIT = '''"""A tiny shop: orders, their totals and the checkout entry point."""

from shop.orders import Order, total

__all__ = ["Order", "total"]
'''

ORDERS_V1 = '''"""Orders and their totals."""

from shop.pricing import apply_discount


class Order:
    """An order of priced lines."""

    def __init__(self, prices: list[float]) -> None:
        self.prices = prices

    def subtotal(self) -> float:
        """The sum of the line prices."""
        return sum(self.prices)


def total(order: Order, rate: float = 0.0) -> float:
    """The order's total after the discount."""
    return apply_discount(order.subtotal(), rate)
'''

ORDERS_V2 = ORDERS_V1.replace(
    "    return apply_discount(order.subtotal(), rate)\n",
    "    return round(apply_discount(order.subtotal(), rate), 2)\n",
)

PRICING = '''"""Discount rules."""


def apply_discount(amount: float, rate: float) -> float:
    """Take ``rate`` (0..1) off ``amount``."""
    return amount * (1.0 - rate)
'''

API = '''"""The shop's HTTP entry points."""

from fastapi import FastAPI

from shop import orders

app = FastAPI()


@app.post("/checkout")
def checkout(prices: list[float]) -> float:
    """Total a basket at the full price."""
    return orders.total(orders.Order(prices))
'''

MODELS_V1 = '''"""Customers."""

from pydantic import BaseModel, field_validator


class Customer(BaseModel):
    """A customer with a contact address."""

    name: str
    email: str

    @field_validator("email")
    @classmethod
    def check_email(cls, value: str) -> str:
        """Reject addresses without an at sign."""
        if "@" not in value:
            raise ValueError("not an email address")
        return value
'''

MODELS_V2 = MODELS_V1.replace(
    '        if "@" not in value:\n',
    '        if value.count("@") != 1 or value.startswith("@"):\n',
)

TAX = '''"""Sales tax."""

RATE = 0.2


def with_tax(amount: float) -> float:
    """``amount`` with sales tax added."""
    return amount * (1.0 + RATE)
'''

README = "# shop\n\nA tiny shop used by knowbase's tests.\n"

PR_12 = {"title": "Round totals to cents", "body": "Totals had float noise; customers saw 9.999999."}


@dataclass(frozen=True)
class ShopHistory:
    """The repository and its commits by role."""

    repo: Path
    initial: str
    docs: str
    rounding: str
    side: str
    merge: str
    emails: str

    @property
    def code_commits(self) -> tuple[str, ...]:
        """First-parent commits that change Python code (the ones mined), newest first."""
        return (self.emails, self.rounding, self.initial)


def build_shop(path: Path) -> ShopHistory:
    """Create the repository described in the module docstring."""
    repo = init_repo(path)
    files = {
        "shop/__init__.py": INIT,
        "shop/orders.py": ORDERS_V1,
        "shop/pricing.py": PRICING,
        "shop/api.py": API,
        "shop/models.py": MODELS_V1,
    }
    initial = commit_tree(repo, files, "Initial shop")
    files["README.md"] = README
    docs = commit_tree(repo, files, "Document the shop\n\nExplain what the shop is for.")
    files["shop/orders.py"] = ORDERS_V2
    rounding = commit_tree(repo, files, "Round totals to cents (#12)\n\nAvoid float noise in totals.")
    side = commit_tree(repo, {**files, "shop/tax.py": TAX}, "Add sales tax")
    tree = run_git(repo, "rev-parse", f"{side}^{{tree}}", dated=False)
    merge = run_git(repo, "commit-tree", tree, "-p", rounding, "-p", side, input=b"Merge branch 'tax'\n")
    run_git(repo, "update-ref", "HEAD", merge, dated=False)
    run_git(repo, "reset", "-q", "--hard", "HEAD", dated=False)
    files["shop/tax.py"] = TAX
    files["shop/models.py"] = MODELS_V2
    emails = commit_tree(repo, files, "Validate emails strictly (#13)")
    run_git(repo, "remote", "add", "origin", "https://github.com/acme/shop.git", dated=False)
    return ShopHistory(repo, initial, docs, rounding, side, merge, emails)
