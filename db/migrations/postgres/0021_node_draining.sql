-- A node being drained (sessiond node drain) hands its sessions to the
-- others and takes no new ones: placement skips it, and it forwards what
-- it would otherwise take. A node that joins again starts undrained.
ALTER TABLE nodes ADD COLUMN draining boolean NOT NULL DEFAULT false;
