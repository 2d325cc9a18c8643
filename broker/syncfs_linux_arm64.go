package broker

// sysSyncfs is syncfs(2)'s number.
const sysSyncfs = 267
