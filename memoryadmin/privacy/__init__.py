"""Privacy requests with their legal clock, and erasure events for the airline's other systems
(GDPR Art. 12(3) and Art. 19). Used by the staff pages and the portal; sits below them."""
