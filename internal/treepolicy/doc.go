// Package treepolicy is the one policy Tether applies to file trees an
// agent or the blob store hands it: which names are credentials, and which
// contents hold secret-looking tokens. The session packer (internal/packer)
// and the workspace snapshot (internal/workspace) both ask it, so the two
// can never disagree about what a credential is.
//
// It promises:
//
//   - Classify names a path's credential class from its name alone: Login
//     for an agent CLI's login or account file, which never leaves the
//     machine; Secret for a file shaped like a credential or private key
//     (.env, *.pem, id_rsa.bak, .npmrc, .kube/config, …), which a
//     workspace keeps only when the run's source tracked it; Plain for the
//     rest. Names compare case-insensitively, and a backup suffix (.bak,
//     .old, ~, …) does not hide a credential;
//   - Scanner finds tokens shaped like API keys and private key blocks in
//     a stream of any size, reporting line and kind, never the value.
package treepolicy
