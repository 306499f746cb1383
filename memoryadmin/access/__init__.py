"""The staff access record: who on the support staff looked at which traveller's memory, when,
how and from where. Never a value. Sits between extraction and the faces: the staff pages write
to it and read it, the portal shows a traveller their own rows."""
