"""The journal's read models as the API shows them: a photo with the addresses the owner's
browser fetches it from (`GET /api/journal/media/…`), which the journal room does not know.
"""

from __future__ import annotations

import msgspec

from app.journal.models import Asset, DaySummary, Entry


class AssetOut(Asset):
    """A photo with its addresses (after the journal's fields: the wire's key order)."""

    url: str
    thumb_url: str


def media_url(asset_id: str, *, thumb: bool = False) -> str:
    """Where the owner's browser gets a photo (or its thumbnail)."""
    return f"/api/journal/media/{asset_id}" + ("/thumb" if thumb else "")


def asset_out(asset: Asset) -> AssetOut:
    return AssetOut(
        **msgspec.structs.asdict(asset),
        url=media_url(asset.asset_id),
        thumb_url=media_url(asset.asset_id, thumb=True),
    )


def entry_out(entry: Entry) -> Entry:
    """The entry with its photos' addresses."""
    return msgspec.structs.replace(entry, media=[asset_out(a) for a in entry.media])


def day_out(day: DaySummary) -> DaySummary:
    """The day with its first photo's thumbnail address in place of the photo's id."""
    if day.photo is None:
        return day
    return msgspec.structs.replace(day, photo=media_url(day.photo, thumb=True))
