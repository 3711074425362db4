// Roles sit below the core and every user of the core speaks of them: importing Capture
// imports Roles.
@_exported import Roles
