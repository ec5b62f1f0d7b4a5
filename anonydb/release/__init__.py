"""The release lifecycle every method goes through: roles resolved once, a staged build under a
private name, verification of every published column, and one transactional swap into the
user's name (or an atomic file export). No method writes a user's table any other way."""
