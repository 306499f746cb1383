"""The support dashboard, one module per page group. Every view checks the staff role first
(`common.staff_required`), reads through `staff.selectors` and `facts.selectors`, writes through
`facts.services` with the signed-in user as actor, and answers a POST with a redirect and a flash
message (or the form again, with its errors, and a 4xx).

- `overview`: the landing page with its counts and chart
- `travellers`: the traveller list and one traveller's facts (the workbench)
- `history`: a traveller's timeline and one fact's page, both with their history
- `actions`: the one-step actions on a fact (expire, flag, approve, reject, delete, reveal)
- `edits`: the forms that change a fact (edit, expiry, add) and bulk actions
- `review`: the review queue and its decisions
- `common`: the role check and what every page shares (lookups, reveal memory, paging)
"""
