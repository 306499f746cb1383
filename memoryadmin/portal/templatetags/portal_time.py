"""The portal names its one time zone once per page, in the traveller's words ("Taiwan time",
台灣時間): every time on it is in the airline's `TIME_ZONE`."""

from __future__ import annotations

from django import template
from django.utils import timezone

from memoryadmin.portal.display import zone_label

register = template.Library()


@register.simple_tag
def portal_zone() -> str:
    return zone_label(timezone.now())
