// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Restricts functions to the account that deployed the contract.
abstract contract Ownable {
    address public owner;

    constructor() {
        owner = msg.sender;
    }

    modifier onlyOwner() {
        require(msg.sender == owner, "not the owner");
        _;
    }

    function transferOwnership(address newOwner) external onlyOwner {
        owner = newOwner;
    }
}
