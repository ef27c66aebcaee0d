// DeviceRegistry: validated device registrations and their stores (SQLite, in-memory).
