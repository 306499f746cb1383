"""The privacy admins' pages under /staff/settings/: memory settings, retention rules, legal
holds, service tokens and the policy history. Every view needs the privacy_admin role."""
