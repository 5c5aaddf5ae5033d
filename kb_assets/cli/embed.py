"""``kb embed [REPO] [--sha REV] [--rag]``: embed an indexed commit's knowledge units (and, with
``--rag``, the RAG baseline's source chunks) through the ``embed_commit`` Dagster job.

Only artifact ids without a vector of the configured model are embedded, so a second run embeds
nothing and a new commit costs its new ids. Prints one line per asset with counts and throughput.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from kb_assets.cli.progress import TerminalProgress
from kb_assets.cli.runner import quiet_store_loss, unwrap
from kb_assets.cli.session import Session, indexed_sha, open_session
from kb_assets.core.errors import KbError
from kb_assets.indexing.progress import set_reporter


class TextProgress(TerminalProgress):
    """Terminal progress counted in texts rather than files."""

    def __call__(self, step: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        pct = done * 100 // total
        if pct != self._last or done == total:
            self._last = pct
            self.stream.write(f"\r{step}: {done}/{total} ({pct}%)\x1b[K")
            self.stream.flush()
            self._drawn = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb embed``."""
    p.add_argument(
        "--sha", default=None, metavar="REV", help="indexed commit to embed (default: newest indexed on HEAD)"
    )
    p.add_argument("--rag", action="store_true", help="also chunk and embed the source (the RAG baseline)")


def run(args: argparse.Namespace) -> int:
    """Embed the commit and print what was embedded and reused, with throughput."""
    session = open_session(args)
    sha = indexed_sha(session, args.sha)
    assets = ["artifact_embeddings", *(["rag_chunks"] if args.rag else [])]
    metadata = embed_commit(session, sha, assets)
    units = metadata.get("artifact_embeddings", {})
    print(
        f"embedded {sha[:12]} with {units.get('model_id')}: {units.get('total')} units "
        f"({units.get('embedded')} embedded, {units.get('reused')} reused) in {units.get('seconds')}s "
        f"({units.get('texts_per_s')} texts/s)"
    )
    rag = metadata.get("rag_chunks")
    if rag is not None:
        print(
            f"rag chunks {sha[:12]}: {rag.get('files')} files ({rag.get('chunked_blobs')} blobs chunked, "
            f"{rag.get('reused_blobs')} reused), {rag.get('chunks_total')} chunks "
            f"({rag.get('chunks_embedded')} embedded) in {rag.get('chunks_seconds')}s "
            f"({rag.get('chunks_texts_per_s')} texts/s)"
        )
    return 0


def embed_commit(session: Session, sha: str, assets: list[str]) -> dict[str, dict[str, Any]]:
    """Materialize ``assets`` of the commit's partition in this process; their metadata by asset."""
    import dagster as dg

    from kb_assets.cli.instance import open_instance  # Dagster is imported only when running
    from kb_assets.definitions import build_definitions
    from kb_assets.jobs import EMBED_JOB, quiet_config

    instance = open_instance(session.settings, session.store)
    if not instance.has_dynamic_partition("commits", sha):
        instance.add_dynamic_partitions("commits", [sha])
    defs = build_definitions(
        session.settings.with_db_url(session.store.real_url), repo=str(session.repo.root)
    )
    logging.getLogger("dagster").setLevel(logging.ERROR)
    progress = TextProgress(sys.stderr)
    set_reporter(progress)
    try:
        with quiet_store_loss():
            result = defs.resolve_job_def(EMBED_JOB).execute_in_process(
                partition_key=sha,
                instance=instance,
                run_config=quiet_config(),
                asset_selection=[dg.AssetKey(a) for a in assets],
                raise_on_error=True,
                tags={"kb/source": "cli"},
            )
    except KbError:
        raise
    except Exception as err:
        raise unwrap(err) from err
    finally:
        progress.close()
        set_reporter(None)
    return {
        event.asset_key.to_user_string(): {k: v.value for k, v in event.materialization.metadata.items()}
        for event in result.get_asset_materialization_events()
        if event.asset_key is not None
    }
